"""`analysis_result`: a question answered by a pipeline of SQL and semantic-operator steps
(Data Agents §III-B/C), one partition per question of the questions file, like `query_result`.
The agent lives in dia_assets/agents/analysis/; this module wires resources and metadata.

Its partitions are static, read from the questions file when the code location loads (as the
warehouse tables are read from the manifest), while `query_result` keeps the dynamic
`questions` partitions its sensor registers. The two definitions differ on purpose: Dagster
1.13's "Materialize all" dialog opens with an empty selection and a disabled *Launch
backfill* when every partitioned asset shares one definition (LaunchAssetChoosePartitionsDialog
uses `defaultSelection: 'empty'` for any partition type), and offers "All partitions" with
the button enabled when they differ (its `pureAll` target, a backfill of every partition)."""

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Config,
    Failure,
    MaterializeResult,
    StaticPartitionsDefinition,
    multi_asset,
)
from pydantic import Field

from dia_assets.agents.query.questions import load_questions
from dia_assets.dagster.query import warehouse_location
from dia_assets.dagster.question_metadata import answered_check, pipeline_metadata, result_metadata
from dia_assets.dagster.question_outcomes import SINGLE_RUN, answer_each, answered_check_spec
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.memory import MemoryResource
from dia_assets.platform.model.errors import NO_MODEL_MESSAGE
from dia_assets.platform.model.litellm import litellm_chat

if TYPE_CHECKING:  # the pipeline agent's contract imports the agent: loaded when a step runs
    pass


class AnalysisConfig(Config):
    questions_file: str | None = Field(None, description="Default DIA_QUESTIONS, else questions.yaml in the data folder (none without it).")
    max_attempts: int = Field(6, description="Submissions before the question fails.")
    max_turns: int = Field(30, description="Model calls before the question fails.")
    light_model: str | None = Field(None, description="Light stage (default DIA_SEMANTIC_LIGHT_MODEL; none = off).")
    strong_model: str | None = Field(None, description="Strong stage (default DIA_SEMANTIC_STRONG_MODEL, else the agent's model).")
    embedding_stage: bool = Field(True, description="Embedding search and threshold pruning first.")
    calibration_size: int = Field(100, description="Rows the strong model judges to train the proxy stage.")


def _vector_index_and_catalog(context: AssetExecutionContext, memory: MemoryResource, warehouse: str) -> tuple[Any, Any, Any]:
    """pgvector in the shared memory and the catalog's nodes for this warehouse, when reachable."""
    try:
        from dia_assets.agents.catalog.store import CatalogStore
        from dia_assets.agents.semantic_ops.vectors import PgVectorIndex
        from dia_assets.platform.warehouse.fingerprint import database_fingerprint

        store = memory.store()
        nodes = {n.id: n for n in CatalogStore(store).nodes(database_fingerprint(warehouse))}
        return PgVectorIndex(store.connection()), nodes, store
    except Exception as err:  # the operators still run, with in-process search and no catalog
        context.log.warning(f"shared memory unavailable: in-process vector search, no catalog ({err})")
        return None, None, None


ANALYSIS_RESULT_KEY = AssetKey("analysis_result")

def analysis_partitions(questions_file: str | Path | None = None) -> StaticPartitionsDefinition:
    """One partition per question id in the questions file (default DIA_QUESTIONS, else the
    data folder's questions.yaml), read now: a new question needs a code-location reload."""
    return StaticPartitionsDefinition([q["id"] for q in load_questions(questions_file)])


def analysis_result_asset(deps: Sequence[str | AssetKey] = ("warehouse",),
                          questions_file: str | Path | None = None) -> AssetsDefinition:
    """`analysis_result` reading the given warehouse assets (the tables of the manifest, or
    `warehouse`), partitioned by the questions in `questions_file` at load time."""

    partitions = analysis_partitions(questions_file)
    spec = AssetSpec(
        ANALYSIS_RESULT_KEY, partitions_def=partitions, deps=[*deps, "semantic_catalog"], group_name="query",
        kinds={"python", "sql"}, skippable=True,
        description="A question answered by a pipeline of SQL steps and semantic-operator steps "
        "(sem_filter, sem_extract, sem_group, sem_join), each step a table, the final SELECT verified "
        "against its contract. Metadata: tables and operators used, stage mix, model calls, cost. "
        "A question without a verified answer is not materialized: its `answered` check fails with the "
        "reason and the run fails, naming it (one run per backfill: dia_assets/dagster/question_outcomes.py).")

    @multi_asset(name="analysis_result", specs=[spec], can_subset=True, backfill_policy=SINGLE_RUN,
                 check_specs=[answered_check_spec(ANALYSIS_RESULT_KEY, partitions)])
    def _analysis_result(context: AssetExecutionContext, config: AnalysisConfig, workspace: WorkspaceResource,
                         llm: LLMResource, memory: MemoryResource) -> Iterator[MaterializeResult]:
        yield from answer_each(context, ANALYSIS_RESULT_KEY,
                    lambda qid: answer_partition(context, config, workspace, llm, memory, qid))

    return _analysis_result


def answer_partition(context: AssetExecutionContext, config: AnalysisConfig, workspace: WorkspaceResource,
                    llm: LLMResource, memory: MemoryResource, qid: str | None = None) -> MaterializeResult:
    """Answer question `qid` (default: the run's one partition) with a pipeline; its outcome."""
    qid = qid or context.partition_key
    questions = {q["id"]: q for q in load_questions(config.questions_file)}
    if qid not in questions:
        raise Failure(f"no question with id {qid!r} in the questions file")
    question = questions[qid]["question"]
    if not llm.enabled:
        context.log.warning(NO_MODEL_MESSAGE)
        from dia_assets.agents.query.run import no_model_result

        return MaterializeResult(metadata={"status": "no_model", "question": question, "message": NO_MODEL_MESSAGE},
                                 check_results=[answered_check(no_model_result(qid, question), ANALYSIS_RESULT_KEY,
                                                                workspace.root_path)])
    assert llm.model
    warehouse = warehouse_location(workspace)
    if not Path(warehouse).exists():
        raise Failure(f"no DuckDB warehouse at {warehouse}: materialize `warehouse` first")
    # imported here, not at load: the pipeline agent pulls in numpy, pyarrow and psycopg, seconds
    # that every run process (a build too) would pay to load the code location
    from dia_assets.agents.analysis.run import answer_with_pipeline
    from dia_assets.agents.query.loop import AgentSettings
    from dia_assets.agents.semantic_ops.models import CascadeConfig

    cascade = CascadeConfig(embedding=config.embedding_stage, calibration_size=config.calibration_size)
    cascade = cascade.model_copy(update={k: v for k, v in {"light_model": config.light_model,
                                                            "strong_model": config.strong_model or cascade.strong_model or llm.model}.items() if v})
    vectors, catalog, store = _vector_index_and_catalog(context, memory, warehouse)
    link = None
    if store is not None and catalog:
        from dia_assets.agents.catalog.linking import catalog_linker
        from dia_assets.platform.warehouse.fingerprint import database_fingerprint

        link = catalog_linker(store, database_fingerprint(warehouse))
    result, _ = answer_with_pipeline(
        question, warehouse, question_id=qid,
        chat=litellm_chat(llm.model, temperature=llm.temperature, timeout_s=llm.timeout_s),
        workspace=workspace.root_path, manifest_path=workspace.files.manifest,
        settings=AgentSettings(max_attempts=config.max_attempts, max_turns=config.max_turns),
        cascade=cascade, embedder=memory.embeddings.get_embedder(), vector_index=vectors, catalog=catalog,
        catalog_link=link)
    q = result.query
    (context.log.info if q.status == "answered" else context.log.warning)(
        f"{qid}: {q.status}; {len(result.steps)} pipeline steps; {result.model_calls} semantic model calls")
    meta = result_metadata(q)
    meta.update(pipeline_metadata(result))
    return MaterializeResult(metadata=meta, check_results=[answered_check(q, ANALYSIS_RESULT_KEY, workspace.root_path)])
