"""Raw files and the workspace on object storage, against a real S3 API on loopback (moto's
server mode: HTTP on 127.0.0.1, no network)."""

from __future__ import annotations

import csv
import socket
import tempfile
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from dia_assets.platform.files import object_store  # noqa: E402

pytestmark = pytest.mark.heavy  # about a minute on a busy machine (the multiprocess run: 30 s): collected first

ROOT = Path(__file__).resolve().parent.parent
HR = ROOT / "tests" / "fixtures" / "datasets" / "hr" / "raw"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new bucket on the loopback endpoint, with the variables that point s3fs (and boto) at it."""
    for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                        "NO_PROXY": "127.0.0.1", "DIA_OBJECT_CACHE": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "DIA_WAREHOUSE", "DIA_MODEL"):
        monkeypatch.delenv(name, raising=False)
    name = f"dia-{uuid.uuid4().hex[:12]}"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def upload(folder: Path, url: str) -> None:
    fs = object_store.filesystem()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{object_store.split(url)}/{path.relative_to(folder).as_posix()}")


def tmp_workspace() -> str:
    return tempfile.mkdtemp(prefix="dia-ws-")


def table_rows(warehouse: Path) -> dict[str, int]:
    """Rows of every table of a DuckDB warehouse, by schema.table."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        names = con.execute("select table_schema, table_name from information_schema.tables "
                            "where table_type = 'BASE TABLE'").fetchall()
        return {f"{s}.{t}": con.execute(f'select count(*) from "{s}"."{t}"').fetchone()[0] for s, t in names}


def test_mirror_downloads_only_changed_objects_and_deletes_gone_ones(bucket: str, tmp_path: Path) -> None:
    url = f"s3://{bucket}/raw"
    upload(HR, url)
    dest = tmp_path / "mirror"
    first = object_store.pull(url, dest)
    assert sorted(first) == sorted(p.name for p in HR.iterdir())
    assert (dest / "jobs.csv").read_bytes() == (HR / "jobs.csv").read_bytes()
    assert object_store.pull(url, dest) == []  # unchanged ETags: nothing downloaded
    fs = object_store.filesystem()
    fs.pipe_file(f"{bucket}/raw/jobs.csv", b"job_id,title\n1,x\n")
    fs.rm_file(f"{bucket}/raw/regions.csv")
    assert object_store.pull(url, dest) == ["jobs.csv"]
    assert (dest / "jobs.csv").read_bytes() == b"job_id,title\n1,x\n"
    assert not (dest / "regions.csv").exists()


def test_full_pipeline_with_raw_folder_and_workspace_on_s3(bucket: str, tmp_path: Path) -> None:
    """Interpret, build and validate from s3:// into an s3:// workspace: accepted, the same rows
    in every table as the same build from the local folder, the artifacts stored as objects."""
    from dia_assets.pipeline import run

    local = run(HR, tmp_path / "local_ws")
    assert local.report.accepted
    upload(HR, f"s3://{bucket}/raw")
    remote = run(f"s3://{bucket}/raw", f"s3://{bucket}/ws")
    assert remote.report.accepted
    fs = object_store.filesystem()
    for key in ("interpretation.json", "schema/manifest.json", "validation/report.json", "validation/report.md",
                "warehouse.duckdb"):
        assert fs.exists(f"{bucket}/ws/{key}"), key
    assert not fs.exists(f"{bucket}/ws/state/writer.lock")  # the lock is local to its process
    fs.get_file(f"{bucket}/ws/warehouse.duckdb", str(tmp_path / "from_s3.duckdb"))
    expected = table_rows(tmp_path / "local_ws" / "warehouse.duckdb")
    assert table_rows(tmp_path / "from_s3.duckdb") == expected
    # the refined tables (schema main) hold every source record, as the local build's do
    source = {p.stem: sum(1 for _ in csv.reader(p.open(encoding="utf-8", newline=""))) - 1 for p in HR.glob("*.csv")}
    assert {name.split(".", 1)[1]: n for name, n in expected.items() if name.startswith("main.")} == source


def test_a_second_build_from_s3_downloads_nothing_unchanged(bucket: str) -> None:
    from dia_assets.pipeline import run

    url = f"s3://{bucket}/raw"
    upload(HR, url)
    run(url, f"s3://{bucket}/ws")
    assert object_store.pull(url, object_store.mirror_folder(url)) == []


@contextmanager
def checked_credentials(endpoint: str) -> Iterator[None]:
    """Moto accepts any key unless told to authenticate (its reset-auth call: 0 free requests)."""
    def post(body: bytes) -> None:
        req = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=body, method="POST",
                                     headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(req, timeout=10).close()  # noqa: S310 - loopback
    post(b"0")
    try:
        yield
    finally:
        post(b"inf")


@pytest.mark.parametrize("problem", ["no bucket", "bad credentials"])
def test_clear_error_naming_the_url(bucket: str, endpoint: str, problem: str) -> None:
    from dia_assets.cli.errors import error_line
    from dia_assets.pipeline import run

    url = f"s3://{bucket}/raw" if problem == "bad credentials" else f"s3://no-such-{bucket}/raw"
    with pytest.raises(object_store.ObjectStoreError) as err, \
            (checked_credentials(endpoint) if problem == "bad credentials" else nullcontext()):
        run(url, tmp_workspace())
    line = error_line(err.value)
    assert url in line and "\n" not in line and "Traceback" not in line
    assert ("does not exist" if problem == "no bucket" else "access denied") in line


def test_sensor_notices_a_new_object_and_hashes_only_it(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The data sensor on an s3:// folder and workspace: the first tick after a build asks for
    nothing (the interpretation in the bucket says what is built), an unchanged listing asks for
    nothing, a new object asks for one run and is the only object read, its events name its URL."""
    import hashlib

    from dagster import DagsterInstance, DagsterRunStatus, SensorResult, build_sensor_context
    from dagster._core.test_utils import create_run_for_test

    from dia_assets.dagster.sensors.data_sensors import new_data_sensor
    from dia_assets.pipeline import run

    raw, ws = f"s3://{bucket}/raw", f"s3://{bucket}/ws"
    upload(HR, raw)
    run(raw, ws)
    monkeypatch.setenv("DIA_DATA_DIR", raw)
    monkeypatch.setenv("DIA_WORKSPACE", ws)
    monkeypatch.setenv("DIA_SETTLE_S", "0")
    hashed: list[str] = []
    real_hash = object_store.object_hash
    monkeypatch.setattr(object_store, "object_hash", lambda url, fs=None, size=None: hashed.append(url) or real_hash(url, fs, size))
    instance = DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> SensorResult:
        return new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))

    first = tick(None)
    assert not first.run_requests and "no change" in first.skip_reason.skip_message
    assert len(hashed) == len(list(HR.iterdir()))  # a first tick reads every object once
    hashed.clear()
    same = tick(first.cursor)
    assert not getattr(same, "run_requests", None) and hashed == []  # unchanged ETags: nothing read
    body = b"id,name\n1,new\n"
    object_store.filesystem().pipe_file(f"{bucket}/raw/extra.csv", body)
    new = tick(first.cursor)
    assert len(new.run_requests) == 1 and "added: extra.csv" in new.run_requests[0].tags["dia/change"]
    assert hashed == [f"{raw}/extra.csv"]
    events = [e for e in new.asset_events if e.partition == "extra_csv"]
    assert len(events) == 2
    for event in events:
        assert event.tags["dagster/data_version"] == hashlib.sha256(body).hexdigest()
        assert event.metadata["path"].value == f"{raw}/extra.csv" and event.metadata["size_bytes"].value == len(body)
        assert event.metadata["etag"].value == hashlib.md5(body).hexdigest()  # noqa: S324 - S3's ETag of a single-part upload
    create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.SUCCESS, tags=new.run_requests[0].tags)
    hashed.clear()
    after = tick(new.cursor)
    assert not getattr(after, "run_requests", None) and hashed == []  # the change is done: no second run


def test_sensor_waits_for_a_new_object_to_settle(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance, build_sensor_context

    from dia_assets.dagster.sensors.data_sensors import new_data_sensor

    raw = f"s3://{bucket}/raw"
    object_store.filesystem().pipe_file(f"{bucket}/raw/a.csv", b"id\n1\n")
    monkeypatch.setenv("DIA_DATA_DIR", raw)
    monkeypatch.setenv("DIA_WORKSPACE", tmp_workspace())
    monkeypatch.setenv("DIA_SETTLE_S", "3600")
    result = new_data_sensor(build_sensor_context(instance=DagsterInstance.ephemeral()))
    assert not result.run_requests and "waiting for a.csv to settle (size and ETag unchanged" in result.skip_reason.skip_message


def test_sensor_names_a_missing_bucket(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance, build_sensor_context

    from dia_assets.dagster.sensors.data_sensors import new_data_sensor

    monkeypatch.setenv("DIA_DATA_DIR", f"s3://gone-{bucket}/raw")
    monkeypatch.setenv("DIA_WORKSPACE", tmp_workspace())
    result = new_data_sensor(build_sensor_context(instance=DagsterInstance.ephemeral()))
    assert result.skip_message.startswith(f"s3://gone-{bucket}/raw: the bucket does not exist")


# The step processes are spawned, not forked from a forkserver: a forkserver is one per test
# process and keeps the environment it started with, so a later test's (tests/test_production.py)
# steps would see this test's bucket and endpoint, gone by then.
SPAWN = {"spawn": {}}


def _build_job():  # noqa: ANN202 - reconstructable target: the code location's own build_job
    from dia_assets.definitions import build_defs

    return build_defs().resolve_job_def("build_job")


def test_build_job_on_the_multiprocess_executor_with_the_workspace_on_s3(
        bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step is a process with a working copy of its own (removed when the step ends), so
    the interpretation, the manifest, the warehouse and the report reach the next step only
    through the bucket; the run succeeds and the warehouse in the bucket holds the local build's rows."""
    import json

    from dagster import DagsterEventType, execute_job, instance_for_test, reconstructable

    from dia_assets.agents.interpreter import interpret
    from dia_assets.agents.schema_creator.build import write_plan
    from dia_assets.pipeline import run

    expected = table_rows(Path(run(HR, tmp_path / "local_ws").load.warehouse))
    raw, ws = f"s3://{bucket}/raw", f"s3://{bucket}/ws"
    upload(HR, raw)
    # planned before the run (as `make demo` does with plan_job): each step process loads the
    # code location, whose tables come from the manifest in the bucket
    planned = tmp_path / "planned"
    interp = interpret(object_store.local_copy(raw))
    planned.mkdir()
    (planned / "interpretation.json").write_text(interp.to_json(), encoding="utf-8")
    write_plan(interp, planned)
    upload(planned, ws)
    for name, value in {"DIA_WORKSPACE": ws, "DIA_DATA_DIR": raw, "PYTHONPATH": str(ROOT),
                        "DIA_EXECUTOR": "multiprocess"}.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "dagster").mkdir()
    with instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance, \
            execute_job(reconstructable(_build_job), instance=instance,
                        run_config={"execution": {"config": {"max_concurrent": 2, "start_method": SPAWN}}}) as result:
        assert result.success
        starts = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_START]
    pids = {e.step_key: e.pid for e in starts}
    assert set(pids) == {"interpretation", "schema_manifest", "warehouse", "warehouse_checks", "validation_report"}
    assert len(set(pids.values())) == len(pids)  # one process per step
    fs = object_store.filesystem()
    assert json.loads(fs.cat_file(f"{bucket}/ws/validation/report.json"))["accepted"] is True
    fs.get_file(f"{bucket}/ws/warehouse.duckdb", str(tmp_path / "from_s3.duckdb"))
    assert table_rows(tmp_path / "from_s3.duckdb") == expected
    copies = {p.name.rsplit("-", 1)[1] for p in (tmp_path / "cache").glob("workspace-*")}
    assert not copies & {str(pid) for pid in pids.values()}  # each step removed its working copy


def test_dia_build_from_s3_into_s3_and_its_error_line(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`dia build s3://... -w s3://...`: accepted (exit 0); a missing bucket is one line naming it (exit 1)."""
    from typer.testing import CliRunner

    from dia_assets.cli import app

    monkeypatch.delenv("DIA_WORKSPACE", raising=False)
    upload(HR, f"s3://{bucket}/raw")
    ok = CliRunner().invoke(app, ["build", f"s3://{bucket}/raw", "-w", f"s3://{bucket}/ws", "--full", "-q"])
    assert ok.exit_code == 0, ok.output
    assert f"report: s3://{bucket}/ws/validation/report.md" in ok.output
    assert object_store.filesystem().exists(f"{bucket}/ws/validation/report.md")
    bad = CliRunner().invoke(app, ["build", f"s3://gone-{bucket}/raw", "-w", tmp_workspace(), "-q"])
    assert bad.exit_code == 1
    line = bad.output.strip()
    assert line == f"error: dia build: failed: s3://gone-{bucket}/raw: the bucket does not exist; create it or fix the URL"


def test_a_partial_pull_leaves_the_other_files_alone(bucket: str, tmp_path: Path) -> None:
    url = f"s3://{bucket}/raw"
    upload(HR, url)
    dest = tmp_path / "copy"
    object_store.pull(url, dest)
    assert object_store.pull(url, dest, only=("jobs.csv",)) == []
    assert (dest / "regions.csv").exists()  # outside `only`: neither downloaded nor deleted
    object_store.filesystem().rm_file(f"{bucket}/raw/jobs.csv")
    object_store.pull(url, dest, only=("jobs.csv",))
    assert not (dest / "jobs.csv").exists() and (dest / "regions.csv").exists()


def test_push_sends_changed_files_only_and_deletes_removed_ones(bucket: str, tmp_path: Path) -> None:
    url = f"s3://{bucket}/ws"
    upload(HR, url)
    dest = tmp_path / "copy"
    object_store.pull(url, dest)
    assert object_store.push(dest, url) == []
    (dest / "jobs.csv").write_text("job_id\n1\n")
    (dest / "new" / "x.txt").parent.mkdir()
    (dest / "new" / "x.txt").write_text("x")
    (dest / "regions.csv").unlink()
    assert object_store.push(dest, url) == ["jobs.csv", "new/x.txt"]
    fs = object_store.filesystem()
    assert fs.cat_file(f"{bucket}/ws/jobs.csv") == b"job_id\n1\n" and not fs.exists(f"{bucket}/ws/regions.csv")
    assert object_store.pull(url, dest) == []  # what was pushed is known: nothing to fetch back


def test_review_gate_sees_an_edit_of_the_overrides_in_the_bucket(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import build_sensor_context

    from dia_assets.dagster.sensors.data_sensors import review_gate_sensor

    ws = f"s3://{bucket}/ws"
    monkeypatch.setenv("DIA_WORKSPACE", ws)
    monkeypatch.setenv("DIA_DATA_DIR", f"s3://{bucket}/raw")
    fs = object_store.filesystem()
    fs.pipe_file(f"{bucket}/ws/review/interpretation_overrides.yaml", b"tables:\n  jobs:\n    key: [job_id]\n")
    first = review_gate_sensor(build_sensor_context())
    assert first.run_requests == [] and "first sight" in first.skip_reason.skip_message
    fs.pipe_file(f"{bucket}/ws/review/interpretation_overrides.yaml", b"tables:\n  jobs:\n    key: [job_title]\n")
    edited = review_gate_sensor(build_sensor_context(cursor=first.cursor))
    assert len(edited.run_requests) == 1 and edited.run_requests[0].tags["dia/trigger"] == "overrides edited"


def test_drift_sensor_on_an_s3_workspace_reads_and_writes_through_the_bucket(
        bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first tick stores the interpretation as the previous one (an object); after a build
    of changed files the next tick finds the drift and its report lands in the bucket."""
    from dagster import DagsterInstance, build_sensor_context

    from dia_assets.dagster.sensors.drift_sensor import drift_sensor
    from dia_assets.pipeline import run

    raw, ws = f"s3://{bucket}/raw", f"s3://{bucket}/ws"
    upload(HR, raw)
    run(raw, ws)
    monkeypatch.setenv("DIA_WORKSPACE", ws)
    monkeypatch.setenv("DIA_DATA_DIR", raw)
    instance = DagsterInstance.ephemeral()
    fs = object_store.filesystem()
    first = drift_sensor(build_sensor_context(instance=instance))
    assert first.cursor and fs.exists(f"{bucket}/ws/history/interpretation.previous.json")
    jobs = (HR / "jobs.csv").read_text(encoding="utf-8").splitlines()
    fs.pipe_file(f"{bucket}/raw/jobs.csv", ("\n".join(f"{line},x" for line in jobs) + "\n").encode())  # a new column
    run(raw, ws, replace_anyway=True)
    second = drift_sensor(build_sensor_context(instance=instance, cursor=first.cursor))
    assert second.cursor != first.cursor
    reports = fs.find(f"{bucket}/ws/drift")
    assert len(reports) == 1 and b"jobs" in fs.cat_file(reports[0])


def test_quality_sensor_writes_its_diagnosis_into_the_bucket(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import AssetMaterialization, DagsterInstance, build_sensor_context

    from dia_assets.dagster.sensors.quality_sensor import quality_sensor

    monkeypatch.setenv("DIA_WORKSPACE", f"s3://{bucket}/ws")
    instance = DagsterInstance.ephemeral()

    def answer(qid: str, ok: bool) -> None:
        instance.report_runless_asset_event(AssetMaterialization(
            "query_result", partition=qid,
            metadata={"status": "answered" if ok else "failed", "verification_passed": ok}))

    for i in range(30):
        answer(f"q{i % 5}", True)
    healthy = quality_sensor(build_sensor_context(instance=instance))
    for i in range(10):
        answer(f"q{i % 5}", i % 5 not in (1, 2))
    result = quality_sensor(build_sensor_context(instance=instance, cursor=healthy.cursor))
    assert sorted(r.partition_key for r in result.run_requests) == ["q1", "q2"]
    fs = object_store.filesystem()
    (found,) = fs.find(f"{bucket}/ws/diagnosis")
    assert found.rsplit("/", 1)[1].startswith("quality-") and b"- q1" in fs.cat_file(found)
