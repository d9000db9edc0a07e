"""The instance config the project writes (Makefile's dagster.yaml rule, dia_assets/dagster/instance.py):
the same text in both places, and a run queue that Dagster reads as looked at every second."""

from __future__ import annotations

import re
from pathlib import Path

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef

from dia_assets.dagster.dev_session import write_instance_config
from dia_assets.dagster.instance import DAGSTER_YAML

ROOT = Path(__file__).resolve().parents[1]


def _makefile_yaml() -> str:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    printf = re.search(r"^\$\(DAGSTER_HOME\)/dagster\.yaml:\n(?:\t.*\n)*?\t@printf '(.*)' > \$@$", text, re.M)
    assert printf, "the Makefile's dagster.yaml rule is not a single printf"
    return printf.group(1).encode().decode("unicode_escape")


def test_makefile_and_instance_module_write_the_same_config() -> None:
    assert _makefile_yaml() == DAGSTER_YAML


def test_the_run_queue_is_dequeued_every_second(tmp_path: Path) -> None:
    write_instance_config(tmp_path)
    instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path)))
    try:
        coordinator = instance.run_coordinator
        assert type(coordinator).__name__ == "QueuedRunCoordinator"
        assert coordinator.dequeue_interval_seconds == 1
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert {"key": "dia/workspace", "value": "writer", "limit": 1} in limits
    finally:
        instance.dispose()


def test_an_existing_instance_config_is_kept(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    write_instance_config(tmp_path)
    assert (tmp_path / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"
