"""Spark warehouses for the tests: local mode (`local[2]`) on pyspark, one JVM per xdist worker.
Without pyspark (`pip install 'dia[spark]'`, `make test-spark`) the Spark tests skip, except
where Spark is required (CI, DIA_REQUIRE_SPARK=1): there a missing pyspark or Java fails."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse.spark import set_current

MASTER = "local[2]"


def require_spark() -> None:
    """Skip (or fail where Spark is required) without pyspark."""
    if importlib.util.find_spec("pyspark") is None:
        _missing("pyspark is not installed (make test-spark installs it)")


def spark_target(root: Path) -> str:
    return f"spark://{MASTER}{root.resolve()}"


def spark_from_duckdb(duck: Path, root: Path) -> str:
    """A Spark warehouse holding a DuckDB file's tables (its `main` refined, its other schemas as
    layers of the same name), installed as the current version."""
    build_id = uuid.uuid4().hex[:12]
    con = duckdb.connect(str(duck), read_only=True)
    try:
        for schema, table in con.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall():
            layer = "refined" if schema == "main" else schema
            out = root / build_id / layer / table
            out.mkdir(parents=True)
            con.execute(f"COPY {q(schema)}.{q(table)} TO {sql_str(str(out / 'part-0.parquet'))} (FORMAT parquet)")
    finally:
        con.close()
    set_current(root, build_id)
    return spark_target(root)


# --- servers on loopback: a Spark Connect server, a standalone Master and Worker ---------------


def _missing(reason: str) -> None:
    """Skip, or fail where Spark is required (CI)."""
    if os.environ.get("DIA_REQUIRE_SPARK"):
        pytest.fail(f"Spark tests are required here but {reason}", pytrace=False)
    pytest.skip(reason)


def require_connect() -> None:
    """pyspark with its Connect client (grpcio-status, googleapis-common-protos: the spark extra)."""
    require_spark()
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except Exception as err:  # noqa: BLE001 (any missing piece: ImportError or pyspark's own)
        _missing(f"pyspark's Spark Connect client cannot load ({err})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SparkProcess:
    """A Spark JVM started from pyspark's bundled scripts, its output in a log file; stopped
    (its process group) by `stop`."""

    def __init__(self, name: str, argv: list[str], folder: Path, env: dict[str, str] | None = None) -> None:
        import pyspark

        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            _missing("no Java on the PATH")
        home = Path(pyspark.__file__).parent
        self.log = folder / f"{name}.log"
        folder.mkdir(parents=True, exist_ok=True)
        environ = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
                   "SPARK_CONF_DIR": str(folder), "SPARK_LOG_DIR": str(folder), **(env or {})}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([str(home / "bin" / argv[0]), *argv[1:]], cwd=folder, env=environ,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_for(self, ready: Callable[[], bool], what: str, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                self.stop()
                _missing(f"{what} did not start ({self.log}):\n{tail}")
            time.sleep(0.3)

    def logged(self, text: str) -> bool:
        return text in self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


@contextlib.contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """A Spark Connect server (local[2]) on a free loopback port; yields its `sc://` address."""
    require_connect()
    port = free_port()
    server = SparkProcess("connect", [
        "spark-submit", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name", "dia-test-connect", "--master", "local[2]",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.sql.warehouse.dir={folder / 'spark-warehouse'}",
    ], folder)
    try:
        server.wait_for(lambda: _accepts(port), "the Spark Connect server")
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


@contextlib.contextmanager
def standalone_cluster(folder: Path) -> Iterator[str]:
    """A standalone Master and one Worker (1 core, 1 GB) on loopback; yields the master URL once
    the worker registered. Executors run in their own JVMs, started by the worker."""
    require_spark()
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    quiet = {"SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
             "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=false"}
    master = SparkProcess("master", ["spark-class", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                     "--port", str(port), "--webui-port", "0"], folder, quiet)
    worker = None
    try:
        master.wait_for(lambda: _accepts(port), "the Spark master")
        worker = SparkProcess("worker", ["spark-class", "org.apache.spark.deploy.worker.Worker", master_url,
                                         "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                                         "--webui-port", "0", "--work-dir", str(folder / "work")], folder, quiet)
        worker.wait_for(lambda: worker.logged("Successfully registered with master"), "the Spark worker")
        yield master_url
    finally:
        if worker is not None:
            worker.stop()
        master.stop()
