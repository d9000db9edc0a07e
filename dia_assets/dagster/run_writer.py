"""Dagster glue for writer.py: a step that writes the workspace holds it as part of its run's
build attempt (the attempt id is the run id, so interpretation, schema_manifest and warehouse
of one run are one attempt), waiting for another writer rather than failing."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path

from dagster import AssetExecutionContext

from dia_assets.agents.schema_creator.attempt import Attempt
from dia_assets.agents.schema_creator.writer import scheduled_wait_s, writing
from dia_assets.platform.settings import get_settings

WAREHOUSE_OP = "warehouse"  # the multi-asset that loads, validates and installs
LOAD = "load"  # its step: the attempt ends there


def run_builds(context: AssetExecutionContext) -> bool:
    """Whether this run goes on to the warehouse step (else the attempt ends with this step)."""
    return WAREHOUSE_OP in {node.name for node in context.job_def.nodes}


def run_writer(context: AssetExecutionContext, workspace: Path, step: str, warehouse: str,
               ) -> AbstractContextManager[Attempt | None]:
    """`writing` for a step of this run. The run's process carries the attempt between steps:
    this one (in-process executor) or its parent (one process per step, DIA_EXECUTOR=multiprocess)."""
    per_step = get_settings().executor == "multiprocess"
    return writing(workspace, f"dagster run {context.run_id[:8]} ({context.job_def.name})", step, warehouse,
                   attempt_id=context.run_id, final=step == LOAD or not run_builds(context),
                   wait_s=scheduled_wait_s(), say=context.log.warning, next_pid=os.getppid() if per_step else None)
