"""A small code location for tests/test_question_statuses.py: `query_result` over the example
warehouse (workspace from DIA_WORKSPACE, the scripted model when STATUSES_TEST_MODEL names it), one asset downstream of the
answers and one beside them, as a daemon loads it for a real asset backfill."""

import os

from dagster import Definitions, MaterializeResult, asset, in_process_executor

from dia_assets.dagster.query import query_result_asset
from dia_assets.dagster.resources import LLMResource, WorkspaceResource


@asset
def beside_answers() -> MaterializeResult:
    """Shares no lineage with the questions: runs whatever they do."""
    return MaterializeResult(metadata={"ran": True})


@asset(deps=["query_result"])
def after_answers() -> MaterializeResult:
    """Reads every answer (as `lineage_report` and `memory_lessons` do)."""
    return MaterializeResult(metadata={"ran": True})


defs = Definitions(
    assets=[query_result_asset(deps=[], with_memory=False), beside_answers, after_answers],
    resources={"workspace": WorkspaceResource(), "llm": LLMResource(model=os.environ.get("STATUSES_TEST_MODEL"))},
    executor=in_process_executor,
)
