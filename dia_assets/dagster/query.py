"""Dagster glue for the Query Generator: the `query_result` asset, one dynamic partition per
question (`questions.yaml` in the data folder, or the file DIA_QUESTIONS names), and the ways to
register partitions (a function and a sensor). The agent itself lives in
dia_assets/agents/query/ and knows nothing about Dagster."""

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Config,
    DagsterInstance,
    DefaultSensorStatus,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    multi_asset,
    sensor,
)
from pydantic import Field

from dia_assets.agents.data_folder import ADD_QUESTIONS_HINT, questions_file
from dia_assets.agents.locations import default_warehouse
from dia_assets.agents.query.questions import load_questions
from dia_assets.dagster.question_metadata import answered_check, pipeline_metadata, result_metadata
from dia_assets.dagster.question_outcomes import SINGLE_RUN, answer_each, answered_check_spec
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.memory import MemoryResource
from dia_assets.platform.model.errors import NO_MODEL_MESSAGE
from dia_assets.platform.model.litellm import litellm_chat
from dia_assets.platform.settings import get_settings
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.workspace import Workspace

# The agent (sqlglot, the charts, the schema index), the result contract and the workspace state
# are imported where a step uses them, not here: every run worker loads this module, a build too.
if TYPE_CHECKING:
    from dia_assets.agents.query.memory import QueryMemory

GROUP = "query"
QUESTIONS = DynamicPartitionsDefinition(name="questions")
QUERY_RESULT_KEY = AssetKey("query_result")


query_job = define_asset_job("query_job", selection=[QUERY_RESULT_KEY], partitions_def=QUESTIONS,
                              description="Answer one question (a `questions` partition).")


class QueryConfig(Config):
    allow_writes: bool = Field(False, description="Apply verified modifications (DDL/DML) to the warehouse.")
    questions_file: str | None = Field(None, description="Default DIA_QUESTIONS, else questions.yaml in the data folder (none without it).")
    max_attempts: int = Field(6, description="Submissions before the question fails.")
    max_turns: int = Field(24, description="Model calls before the question fails.")


def warehouse_location(workspace: WorkspaceResource) -> str:
    return default_warehouse(workspace.root_path)


def question_changes(existing: set[str], path: str | Path | None = None) -> tuple[list[str], list[str]]:
    """(keys to add, keys to delete): the partitions follow the current questions file, so after
    a switch of data folder the UI lists that folder's questions, not the previous one's."""
    wanted = [q["id"] for q in load_questions(path)]
    return [k for k in wanted if k not in existing], sorted(existing - set(wanted))


def register_question_partitions(instance: DagsterInstance, path: str | Path | None = None) -> list[str]:
    """Add a partition for every question not registered yet and delete those of questions no
    longer in the file; returns the new keys."""
    new, gone = question_changes(set(instance.get_dynamic_partitions(QUESTIONS.name)), path)
    if new:
        instance.add_dynamic_partitions(QUESTIONS.name, new)
    for key in gone:
        instance.delete_dynamic_partition(QUESTIONS.name, key)
    return new


def no_questions_reason() -> str:
    """What the UI shows when there is nothing to ask: where questions come from."""
    path = questions_file()
    if path is None:
        return f"no questions for {get_settings().data_dir}: {ADD_QUESTIONS_HINT}"
    return f"no new questions in {path}"


@sensor(name="question_partitions", minimum_interval_seconds=60, asset_selection=[QUERY_RESULT_KEY],
        default_status=DefaultSensorStatus.RUNNING,
        description="Keeps one `questions` partition per question of the questions file (DIA_QUESTIONS, else "
        "questions.yaml in the data folder; none without it) and, when a model is configured, requests a run "
        "for each new one. Questions no longer in the file lose their partition.")
def question_partitions_sensor(context: SensorEvaluationContext) -> "SensorResult | SkipReason":
    new, gone = question_changes(set(context.instance.get_dynamic_partitions(QUESTIONS.name)))
    if not new and not gone:
        return SkipReason(no_questions_reason())
    runs = [RunRequest(partition_key=k, run_key=f"question:{k}") for k in new] if get_settings().model else []
    requests = ([QUESTIONS.build_add_request(new)] if new else []) + ([QUESTIONS.build_delete_request(gone)] if gone else [])
    skip = no_questions_reason() if not runs and not new else None  # only retired partitions
    return SensorResult(dynamic_partitions_requests=requests, run_requests=runs, skip_reason=skip)


def _memory(context: AssetExecutionContext, memory_resource: Any, warehouse: str) -> "QueryMemory | None":
    if memory_resource is None:
        return None
    try:
        from dia_assets.agents.query.memory import StoreMemory, warehouse_fingerprint

        return StoreMemory(memory_resource.store(), warehouse_fingerprint(warehouse))
    except Exception as err:  # memory is an aid: answer without it rather than fail
        context.log.warning(f"shared memory unavailable, answering without it: {err}")
        return None


def materialize_question(
    context: AssetExecutionContext, config: QueryConfig, workspace: WorkspaceResource,
    llm: LLMResource, memory_resource: Any = None, qid: str | None = None,
) -> MaterializeResult:
    """Answer question `qid` (default: the run's one partition); its outcome, answered or not."""
    from dia_assets.agents.query.loop import AgentSettings
    from dia_assets.agents.query.run import no_model_result, previous_answer, write_artifacts

    qid = qid or context.partition_key
    questions = {q["id"]: q for q in load_questions(config.questions_file)}
    if qid not in questions:
        raise Failure(f"no question with id {qid!r} in the questions file")
    question = questions[qid]["question"]
    follows = questions[qid].get("follows")
    folder = workspace.tree.query(qid).folder
    if not llm.enabled:
        context.log.warning(NO_MODEL_MESSAGE)
        result = write_artifacts(no_model_result(qid, question), None, None, folder)
        return MaterializeResult(metadata={
            "status": "no_model", "question": question, "message": NO_MODEL_MESSAGE,
            "answer_path": MetadataValue.path(result.artifacts["answer"]),
        }, check_results=[answered_check(result, QUERY_RESULT_KEY, workspace.root_path)])
    warehouse = warehouse_location(workspace)
    if target_dialect(warehouse).file_based and not Path(warehouse).exists():
        raise Failure(f"no warehouse at {warehouse}: materialize `warehouse` first (dia build / make demo)")
    assert llm.model
    previous = previous_answer(workspace.root_path, follows) if follows else None
    if follows and previous is None:
        raise Failure(f"{qid} follows {follows!r}, which has no accepted answer yet: materialize it first")
    memory = _memory(context, memory_resource, warehouse)
    from dia_assets.agents.catalog.linking import catalog_link_for, catalog_nodes_for

    catalog, link = (catalog_nodes_for(warehouse, memory), catalog_link_for(warehouse, memory)) \
        if memory is not None and target_dialect(warehouse).file_based else (None, None)
    context.log.info(f"{qid}: catalog schema linking {'on' if link else 'off (no catalog for this warehouse)'}")
    if memory is not None and context.run.tags.get("dia/fresh_memory") == "true":
        # a replan after answer quality fell: hold back what the failed answer recalled
        from dia_assets.agents.query.memory import FreshMemory, used_in_previous_answer

        held = used_in_previous_answer(workspace.root_path, qid)
        memory = FreshMemory(memory, held)
        context.log.info(f"{qid}: fresh memory, holding back {sorted(held) or 'nothing'}")
    # the agent decides whether the question needs a SQL + semantic pipeline (agents/analysis/auto.py);
    # imported here: the pipeline agent pulls in numpy, pyarrow and psycopg, which every run process
    # (a build too) would otherwise pay for when it loads the code location
    from dia_assets.agents.analysis.auto import answer

    result, run, analysis = answer(
        question, warehouse, question_id=qid, model=llm.model,
        chat=litellm_chat(llm.model, temperature=llm.temperature, timeout_s=llm.timeout_s),
        memory=memory,
        manifest_path=workspace.files.manifest,
        workspace=workspace.root_path, allow_writes=config.allow_writes, previous=previous,
        settings=AgentSettings(max_attempts=config.max_attempts, max_turns=config.max_turns),
        catalog_link=link, catalog=catalog,
        embedder=memory_resource.embeddings.get_embedder if memory_resource is not None else None,
    )
    log = context.log.info if result.status == "answered" else context.log.warning
    log(f"{qid}: {result.status} after {result.attempts} attempt(s): {result.message}")
    for warning in result.warnings:
        context.log.warning(f"{qid}: {warning}")
    meta = result_metadata(result)
    if analysis is not None:
        meta.update(pipeline_metadata(analysis))
    return MaterializeResult(metadata=meta, check_results=[answered_check(result, QUERY_RESULT_KEY, workspace.root_path)])


ANSWERED = answered_check_spec(QUERY_RESULT_KEY, QUESTIONS)


def query_result_asset(deps: Sequence[str | AssetKey] = ("warehouse",), with_memory: bool = True) -> AssetsDefinition:
    """The `query_result` asset; `with_memory` adds the `memory` resource (MemoryResource).

    One run per backfill (single-run policy), and a partition is materialized only when its
    question was answered: see dia_assets/dagster/question_outcomes.py."""
    spec = AssetSpec(
        QUERY_RESULT_KEY, partitions_def=QUESTIONS, deps=list(deps), group_name=GROUP, kinds={"python", "sql"},
        skippable=True,
        description="The answer to one question (one partition per question of the questions file: "
        "DIA_QUESTIONS, else questions.yaml in the data folder; no partitions without one: add a questions.yaml, "
        "a YAML list of `id`/`question` items, to the data folder), found and "
        "verified by the Query Generator with SQL on the warehouse; its files are in `queries/{question id}/` "
        "(query.sql, result.parquet, trace.json, answer.md). A question without a verified answer is not "
        "materialized: its `answered` check fails with the reason and the run fails, naming it.",
    )
    kwargs: dict[str, Any] = dict(name="query_result", specs=[spec], check_specs=[ANSWERED], can_subset=True,
                                  backfill_policy=SINGLE_RUN)
    if with_memory:

        @multi_asset(**kwargs)
        def query_result(context: AssetExecutionContext, config: QueryConfig, workspace: WorkspaceResource,
                         llm: LLMResource, memory: MemoryResource) -> Iterator[MaterializeResult]:
            yield from answer_each(context, QUERY_RESULT_KEY,
                        lambda qid: materialize_question(context, config, workspace, llm, memory, qid))

        return query_result

    @multi_asset(**kwargs)
    def query_result_no_memory(context: AssetExecutionContext, config: QueryConfig, workspace: WorkspaceResource,
                               llm: LLMResource) -> Iterator[MaterializeResult]:
        yield from answer_each(context, QUERY_RESULT_KEY, lambda qid: materialize_question(context, config, workspace, llm, qid=qid))

    return query_result_no_memory


def demo_questions_step(defs: Any, instance: DagsterInstance, workspace: Path, say: Any) -> bool:
    """`make demo` step: register the example questions and answer each one with the model in
    DIA_MODEL; without a model, say what is missing and succeed."""
    from dia_assets.contracts.query_result import QueryResult

    keys = [q["id"] for q in load_questions()]
    register_question_partitions(instance)
    print("\n== Query Generator ==")
    if not keys:
        print(no_questions_reason())
        return True
    if not get_settings().model:
        print(f"{len(keys)} questions registered as `questions` partitions; not answered.")
        print(NO_MODEL_MESSAGE)
        return True
    job = defs.resolve_job_def(query_job.name)
    ok = True
    for key in keys:
        say(f"-- answering {key}")
        run = job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False,
                                   run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
        ok = run.success and ok
        path = Workspace(workspace).query(key).result
        if path.exists():
            result = QueryResult.read(path)
            print(f"{key}: {result.status}, {result.row_count} rows, {result.attempts} attempt(s), "
                  f"{result.tokens.total_tokens} tokens, USD {result.tokens.cost_usd:.4f}")
        else:
            print(f"{key}: no result (see the Dagster log)")
    return ok
