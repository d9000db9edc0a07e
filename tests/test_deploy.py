"""The Kubernetes files in deploy/ cannot run here (no container runtime, no cluster), so what
can be checked is checked: the Dockerfile copies files that exist and serves a module that
loads; the Helm values name only real DIA settings with valid values, the same code location,
and the same one-writer limit as deploy/dagster.yaml."""

from __future__ import annotations

import importlib
import json
import re

import yaml

from dia_assets.platform.settings import FIELDS, load_settings
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments), continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (DEPLOY / "Dockerfile").read_text())
    return [tuple(line.split(None, 1)) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def helm() -> dict:
    return yaml.safe_load((DEPLOY / "helm-values.yaml").read_text())


def test_the_image_copies_what_the_package_needs_and_serves_the_code_location():
    copied = [arg.split()[:-1] for op, arg in dockerfile() if op == "COPY"]
    sources = [s for group in copied for s in group]
    assert {"pyproject.toml", "setup.py", "dia_assets", "resources", "sensors"} <= set(sources)
    assert all((ROOT / s).exists() for s in sources), [s for s in sources if not (ROOT / s).exists()]
    [cmd] = [json.loads(arg) for op, arg in dockerfile() if op == "CMD"]
    module = cmd[cmd.index("--module-name") + 1]
    assert cmd[:3] == ["dagster", "api", "grpc"] and importlib.import_module(module).defs is not None
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(arg for op, arg in dockerfile() if op == "ENV")))
    assert {k for k in env if k.startswith("DIA_")} <= set(FIELDS)


def test_the_helm_values_name_real_settings_and_the_same_code_location():
    [dep] = helm()["dagster-user-deployments"]["deployments"]
    env = {e["name"]: e["value"] for e in dep["env"]}
    assert set(env) <= set(FIELDS)  # a misspelt DIA_ name would be ignored silently
    settings = load_settings(env)  # valid values: DIA_EXECUTOR names an executor by module:attribute
    assert settings.executor == "dagster_k8s:k8s_job_executor"
    args = dep["dagsterApiGrpcArgs"]
    assert args[args.index("--module-name") + 1] == "dia_assets.definitions"
    assert dep["includeConfigInLaunchedRuns"]["enabled"]  # run pods mount the shared workspace
    mounts = {m["name"] for m in dep["volumeMounts"]}
    assert mounts == {v["name"] for v in dep["volumes"]}
    assert all(env[k].startswith(m["mountPath"]) for k in ("DIA_DATA_DIR", "DIA_WORKSPACE") for m in dep["volumeMounts"])


def test_the_helm_values_keep_one_writer_per_workspace_like_the_instance_file():
    limits = helm()["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"]
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    assert limits == instance["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert helm()["dagsterDaemon"]["runMonitoring"]["enabled"]
