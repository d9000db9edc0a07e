"""Benchmark: a data-sensor tick over 100,000 unchanged files, against hashing every file.

    python bench/sensor.py [--files N] [--objects M] [--quick] [--keep DIR]

Creates N small CSV files (default 100,000; `--quick`: 10,000) in a temporary folder, 1,000
per subfolder, dated an hour back, and evaluates `new_data_sensor` against a real ephemeral
Dagster instance as the daemon would (the first tick's partitions and its run are recorded in
the instance). Measured in this run:

Ticks measured several times (`--repeats`, median; CPU time beside wall time, as the shared
machine's load stretches wall time):

- `unchanged_tick_s`: a tick over the unchanged folder, from the cursor of the tick before
  (the stat index under the workspace's state/sensor says which files need no hashing);
- `full_hash_tick_s` (the baseline): the same tick with the cursor's index dropped, so every
  file is read and hashed as before this change. Both baseline and new tick run without the
  instance here (`*_no_instance`), so the ratio compares hashing, not the event-log queries
  the old tick also made per file (`old_per_file_query_ms` times N, measured on 1,000 keys);
- `changed_tick_s`: a tick after 10 files changed (10 hashed, 10 checked, a run requested);
- the cursor's and the index file's sizes.

The S3 half (`figures.s3`): M objects (default 5,000; `--quick`: 1,000: moto serves about 60
requests a second here, so 100,000 objects would take half an hour to create and as long to read) in a bucket of a
moto server on loopback (`python -m moto.server`, a process of its own: the `*_cpu_s` figures are
the sensor's own work, the wall times include moto's),
the same tiny CSV files, `DIA_DATA_DIR=s3://bench/raw`. `unchanged_tick_s`: a tick over the
unchanged bucket (one LIST per 1,000 objects, no object read; `list_only_s`: the listing
alone, mostly moto's own work); `full_read_tick_s`: the same
tick without the index, so every object is read and hashed (one GET each). Both without the
instance, as above.

Targets: the unchanged tick under 10 s at 100,000 files (Dagster's sensor timeout is 60 s),
and at most half the full-hash tick even though tiny files make hashing as cheap as it gets;
on S3 the same two, the first as the tick's CPU time projected linearly to 100,000 objects (the
wall time adds the store's answer to 100 LIST requests: moto's here, a real store's elsewhere).
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_S = 10.0
# the files are tiny, so hashing one costs about what listing it does (open, read 40 bytes,
# close): the floor of the full-hash tick. A real export's files of megabytes make the full
# hash grow with the bytes while the unchanged tick does not (it reads none: tests/test_sensor_index.py)
TARGET_RATIO = 0.5
CHANGED = 10


def make_files(data: Path, n: int) -> list[Path]:
    """`n` small CSV files, 1,000 per subfolder, each a header and three rows, an hour old."""
    old = time.time_ns() - 3600 * 10**9
    paths = []
    for i in range(n):
        folder = data / f"part{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True)
        path = folder / f"f{i:06d}.csv"
        path.write_text(f"id,value\n{i},{i * 7 % 1000}\n{i + 1},{i * 3 % 1000}\n{i + 2},{i % 97}\n")
        os.utime(path, ns=(old, old))
        paths.append(path)
    return paths


def timed(fn):  # noqa: ANN001, ANN201 - a thunk and its result
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def repeated(fn, repeats: int):  # noqa: ANN001, ANN201 - a thunk: median wall and CPU seconds, last result
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        cpu = time.process_time()
        wall, out = timed(fn)
        walls.append(wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), out


def s3_half(base: Path, m: int, repeats: int) -> dict:
    """The S3 figures: M objects on a loopback moto server, ticks of new_data_sensor over them."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    import boto3
    from dagster import SensorResult, build_sensor_context

    from dia_assets.agents.adaptation.data_cursor import DataCursor
    from dia_assets.agents.adaptation.folder_index import StateFiles
    from dia_assets.dagster.sensors.data_sensors import new_data_sensor
    from dia_assets.platform.files import object_store
    from dia_assets.platform.workspace import Workspace

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # moto's server in a process of its own, so the ticks' CPU time is the sensor's alone
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    saved = dict(os.environ)
    ws = base / "ws_s3"
    os.environ.update({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
                       "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1", "NO_PROXY": "127.0.0.1",
                       "DIA_DATA_DIR": "s3://bench/raw", "DIA_WORKSPACE": str(ws), "DIA_OBJECT_CACHE": str(base / "cache")})
    try:
        client = boto3.client("s3")
        client.create_bucket(Bucket="bench")

        def put(i: int) -> None:
            body = f"id,value\n{i},{i * 7 % 1000}\n{i + 1},{i * 3 % 1000}\n{i + 2},{i % 97}\n".encode()
            client.put_object(Bucket="bench", Key=f"raw/part{i // 1000:03d}/f{i:06d}.csv", Body=body)

        def upload() -> None:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(put, range(m)))

        setup_s, _ = timed(upload)
        store = StateFiles(Workspace(ws).sensor_index)

        def evaluate(cursor: str | None):  # noqa: ANN202
            return new_data_sensor(build_sensor_context(cursor=cursor))

        cold_s, first = timed(lambda: evaluate(None))
        assert isinstance(first, SensorResult) and first.run_requests, first
        # no instance: the pending run reads as finished, so the next tick moves past the change
        _, settled = timed(lambda: evaluate(first.cursor))
        cursor = settled.cursor
        assert cursor and DataCursor.parse(cursor, store).pending is None
        unchanged_s, unchanged_cpu, same = repeated(lambda: evaluate(cursor), repeats)
        assert not getattr(same, "run_requests", None), same
        list_s, _, listed = repeated(lambda: object_store.listing("s3://bench/raw"), repeats)
        assert len(listed) == m
        no_index = DataCursor.parse(cursor, store).model_copy(update={"index": None}).dump(store)
        full_s, full_cpu, full = repeated(lambda: evaluate(no_index), repeats)
        assert not getattr(full, "run_requests", None), full
        client.put_object(Bucket="bench", Key="raw/part000/f000000.csv", Body=b"id,value\n9,9\n")
        changed_s, changed = timed(lambda: evaluate(cursor))
        assert isinstance(changed, SensorResult) and changed.run_requests, changed
        return {"objects": m, "setup_s": round(setup_s, 1), "cold_tick_s": round(cold_s, 2),
                "unchanged_tick_s": round(unchanged_s, 3), "unchanged_tick_cpu_s": round(unchanged_cpu, 3),
                "list_only_s": round(list_s, 3), "full_read_tick_s": round(full_s, 3), "full_read_tick_cpu_s": round(full_cpu, 3),
                "ratio_vs_full_read": round(unchanged_s / full_s, 3), "changed_tick_s": round(changed_s, 3),
                "changed_files_described": changed.run_requests[0].tags["dia/change"].count(".csv")}
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=None, help="files in the folder (default 100,000)")
    parser.add_argument("--quick", action="store_true", help="10,000 files")
    parser.add_argument("--objects", type=int, default=None, help="objects in the S3 bucket (default 5,000; 0: no S3 half)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the folder here")
    parser.add_argument("--repeats", type=int, default=3, help="ticks measured each way (the median counts)")
    args = parser.parse_args()
    n = args.files or (10_000 if args.quick else 100_000)
    base = args.keep or Path(tempfile.mkdtemp(prefix="dia-bench-sensor-"))
    data, ws = base / "data", base / "ws"
    os.environ.update({"DIA_DATA_DIR": str(data), "DIA_WORKSPACE": str(ws), "DIA_SETTLE_S": "0"})

    from dagster import DagsterInstance, DagsterRunStatus, SensorResult, build_sensor_context
    from dagster._core.test_utils import create_run_for_test

    from dia_assets.agents.adaptation.data_cursor import DataCursor
    from dia_assets.agents.adaptation.folder_index import StateFiles
    from dia_assets.agents.adaptation.snapshot import snapshot
    from dia_assets.dagster.interpretation import latest_raw_version
    from dia_assets.dagster.sensors.data_sensors import new_data_sensor
    from dia_assets.platform.workspace import Workspace

    try:
        setup_s, paths = timed(lambda: make_files(data, n))
        instance = DagsterInstance.ephemeral()
        store = StateFiles(Workspace(ws).sensor_index)

        def evaluate(cursor: str | None, with_instance: bool = True):  # noqa: ANN202
            ctx = build_sensor_context(instance=instance, cursor=cursor) if with_instance \
                else build_sensor_context(cursor=cursor)
            return new_data_sensor(ctx)

        def tick(cursor: str | None, with_instance: bool = True):  # noqa: ANN202
            return timed(lambda: evaluate(cursor, with_instance))

        # first tick: every file is new (no instance: its per-file event-log checks would only
        # find nothing reported); the daemon then registers the partitions and runs the build
        cold_s, first = tick(None, with_instance=False)
        assert isinstance(first, SensorResult) and first.run_requests, first
        for req in first.dynamic_partitions_requests:
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.SUCCESS,
                            tags=first.run_requests[0].tags)
        _, settled = tick(first.cursor)  # the run succeeded: the cursor moves past the change
        cursor = settled.cursor
        assert cursor and DataCursor.parse(cursor, store).pending is None
        unchanged_s, unchanged_cpu, same = repeated(lambda: evaluate(cursor), args.repeats)
        assert not getattr(same, "run_requests", None), same
        unchanged_bare_s, unchanged_bare_cpu, _ = repeated(lambda: evaluate(cursor, False), args.repeats)
        no_index = DataCursor.parse(cursor, store).model_copy(update={"index": None}).dump(store)
        full_s, full_cpu, full = repeated(lambda: evaluate(no_index, False), args.repeats)
        assert not getattr(full, "run_requests", None), full
        snapshot_s, _ = timed(lambda: snapshot(data))
        keys = sorted(instance.get_dynamic_partitions("raw_files"))[:1000]
        query_s, _ = timed(lambda: [latest_raw_version(instance, key) for key in keys])
        for path in paths[:: max(1, n // CHANGED)][:CHANGED]:
            path.write_text(path.read_text() + "9,9\n")
        changed_s, changed = tick(cursor)
        assert isinstance(changed, SensorResult) and changed.run_requests, changed
        described = changed.run_requests[0].tags["dia/change"]
        index_files = list(store.folder.glob("index-*.json.gz"))
        m = args.objects if args.objects is not None else (1_000 if args.quick else 5_000)
        s3 = s3_half(base, m, args.repeats) if m else None
        figures = {
            "files": n,
            "setup_s": round(setup_s, 1),
            "cold_tick_s": round(cold_s, 2),
            "unchanged_tick_s": round(unchanged_s, 3),
            "unchanged_tick_cpu_s": round(unchanged_cpu, 3),
            "unchanged_tick_no_instance_s": round(unchanged_bare_s, 3),
            "full_hash_tick_no_instance_s": round(full_s, 3),
            "ratio_vs_full_hash": round(unchanged_bare_s / full_s, 3),
            "ratio_vs_full_hash_cpu": round(unchanged_bare_cpu / full_cpu, 3),
            "old_snapshot_only_s": round(snapshot_s, 3),
            "old_per_file_query_ms": round(query_s * 1000 / max(1, len(keys)), 3),
            "changed_tick_s": round(changed_s, 3),
            "changed_files_described": described.count(".csv"),
            "cursor_bytes_settled": len(cursor),
            "cursor_bytes_pending": len(changed.cursor or ""),
            "index_file_bytes": max((p.stat().st_size for p in index_files), default=0),
            "index_files_kept": len(index_files),
            "snapshot_file_bytes": max((p.stat().st_size for p in store.folder.glob("snapshot-*.json.gz")), default=0),
            "s3": s3,
            "load_average": [round(x, 1) for x in os.getloadavg()],
        }
        targets = {"unchanged_tick_s": f"< {TARGET_S} at 100,000 files (Dagster's sensor timeout: 60 s)",
                   "ratio_vs_full_hash": f"<= {TARGET_RATIO}",
                   "s3.unchanged_tick_cpu_s": f"< {TARGET_S} projected to 100,000 objects (x 100,000 / objects)",
                   "s3.ratio_vs_full_read": f"<= {TARGET_RATIO}"}
        met = unchanged_s < TARGET_S * n / 100_000 and figures["ratio_vs_full_hash"] <= TARGET_RATIO \
            and figures["changed_files_described"] == CHANGED
        if s3 is not None:
            met = met and s3["unchanged_tick_cpu_s"] < TARGET_S * m / 100_000 and s3["ratio_vs_full_read"] <= TARGET_RATIO \
                and s3["changed_files_described"] == 1
        print(json.dumps({"bench": "sensor", "figures": figures, "targets": targets, "met": met}), flush=True)
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
