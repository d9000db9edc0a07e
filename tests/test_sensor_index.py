"""Issue 33, sensors that scale: a data-sensor tick reads only the files whose size or
modification time moved since the last tick, and its cursor stays small at many files."""

from __future__ import annotations

import builtins
import io
import os
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, SensorResult, build_sensor_context
from dagster._core.test_utils import create_run_for_test

from dia_assets.agents.adaptation.data_cursor import INLINE_MAX, DataCursor
from dia_assets.agents.adaptation.folder_index import StateFiles, local_listing, refresh
from dia_assets.dagster.interpretation import latest_raw_version, latest_raw_versions, raw_events
from dia_assets.dagster.sensors.data_sensors import new_data_sensor
from dia_assets.platform.files.discover import content_hash, discover
from dia_assets.platform.workspace import Workspace

HOUR_AGO = time.time_ns() - 3600 * 10**9


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")
    return data, ws


def write_old(path: Path, text: str, ns: int = HOUR_AGO) -> None:
    """A file last written an hour ago: past the racy window, as most of a folder is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, ns=(ns, ns))


class Opened:
    """Which files under a folder were opened for reading (every read goes through io.open)."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        real = io.open

        def spy(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            mode = args[0] if args else kwargs.get("mode", "r")
            if "r" in mode and isinstance(file, (str, os.PathLike)) and Path(file).resolve().is_relative_to(folder.resolve()):
                self.names.append(Path(file).name)
            return real(file, *args, **kwargs)

        monkeypatch.setattr(io, "open", spy)
        monkeypatch.setattr(builtins, "open", spy)


def settled_cursor(instance: DagsterInstance) -> str:
    """The cursor once the folder's first change was requested and its run succeeded."""
    first = new_data_sensor(build_sensor_context(instance=instance))
    assert isinstance(first, SensorResult) and first.run_requests
    create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.SUCCESS, tags=first.run_requests[0].tags)
    settled = new_data_sensor(build_sensor_context(instance=instance, cursor=first.cursor))
    return settled.cursor


def test_a_tick_over_an_unchanged_folder_reads_no_data_file(env, monkeypatch):
    data, _ = env
    for i in range(30):
        write_old(data / f"part{i % 3}" / f"f{i}.csv", f"id\n{i}\n")
    instance = DagsterInstance.ephemeral()
    cursor = settled_cursor(instance)
    opened = Opened(data, monkeypatch)
    asked: list[str] = []
    real = instance.get_dynamic_partitions
    monkeypatch.setattr(instance, "get_dynamic_partitions", lambda name: asked.append(name) or real(name))
    same = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
    assert not getattr(same, "run_requests", None)
    assert opened.names == []
    assert asked == []  # the same partition keys as the tick before reconciled: no query of them all
    (data / "part0" / "f0.csv").unlink()  # a file gone: its partition is deleted
    gone = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
    assert asked == ["raw_files"] and opened.names == []
    assert gone.run_requests[0].tags["dia/change"] == "deleted: part0/f0.csv"
    write_old(data / "part0" / "f0.csv", "id\n0\n")
    # without the stat index (a cursor of before this change) every file is read again
    bare = DataCursor.parse(cursor, StateFiles(Workspace(env[1]).sensor_index)).model_copy(update={"index": None})
    new_data_sensor(build_sensor_context(instance=instance, cursor=bare.dump()))
    assert sorted(opened.names) == sorted(f"f{i}.csv" for i in range(30))


def test_only_moved_files_are_read_and_a_same_stat_rewrite_is_not_seen(env, monkeypatch):
    data, _ = env
    for name in ("a.csv", "b.csv", "c.csv"):
        write_old(data / name, "id\n1\n")
    instance = DagsterInstance.ephemeral()
    cursor = settled_cursor(instance)
    opened = Opened(data, monkeypatch)
    # a touch: same size and content, a new mtime: read again, and no change to build
    write_old(data / "a.csv", "id\n1\n", ns=HOUR_AGO + 10**9)
    touched = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
    assert opened.names == ["a.csv"] and not getattr(touched, "run_requests", None)
    cursor = touched.cursor or cursor
    # the contract is size and mtime (as rsync's quick check): a rewrite keeping both to the
    # nanosecond is not seen until one of them moves
    write_old(data / "b.csv", "id\n2\n")  # same size, mtime put back
    opened.names.clear()
    missed = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
    assert opened.names == [] and not getattr(missed, "run_requests", None)
    # a change of size is read, built, and described as the change it is
    write_old(data / "c.csv", "id\n1\n2\n")
    changed = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
    assert opened.names == ["c.csv"]
    assert changed.run_requests[0].tags["dia/change"] == "changed: c.csv"
    assert changed.asset_events and {e.partition for e in changed.asset_events} == {"c_csv"}
    assert changed.asset_events[0].tags["dagster/data_version"] == content_hash(data / "c.csv")


def test_a_file_written_within_the_racy_window_is_read_on_every_tick(env):
    """Its mtime may not move for a write in the same clock tick (coarse file systems): its
    hash is not trusted for reuse until the mtime is older than that."""
    data, _ = env
    write_old(data / "old.csv", "id\n1\n")
    (data / "new.csv").write_text("id\n1\n")  # now
    calls: list[str] = []

    def hash_of(rel: str) -> str:
        calls.append(rel)
        return content_hash(data / rel)

    index, read = refresh(local_listing(data), None, hash_of)
    assert read == ["new.csv", "old.csv"]
    # rewritten within the same mtime and size (as a coarse clock would leave it)
    st = (data / "new.csv").stat()
    (data / "new.csv").write_text("id\n2\n")
    os.utime(data / "new.csv", ns=(st.st_atime_ns, st.st_mtime_ns))
    again, read = refresh(local_listing(data), index, hash_of)
    assert read == ["new.csv"] and again.entries["new.csv"].hash == content_hash(data / "new.csv")
    assert again.entries["new.csv"].hash != index.entries["new.csv"].hash


def test_the_index_keeps_reported_flags_and_drops_vanished_files(tmp_path):
    write_old(tmp_path / "a.csv", "id\n1\n")
    write_old(tmp_path / "b.csv", "id\n1\n")
    index, _ = refresh(local_listing(tmp_path), None, lambda rel: content_hash(tmp_path / rel))
    assert index.unreported().keys() == {"a.csv", "b.csv"}
    reported = index.all_reported()
    write_old(tmp_path / "a.csv", "id\n1\n", ns=HOUR_AGO + 5)  # touched, same content: still reported
    listing = local_listing(tmp_path)
    (tmp_path / "b.csv").unlink()  # gone between the listing and its (needless) read
    after, read = refresh(listing, reported, lambda rel: content_hash(tmp_path / rel))
    assert read == ["a.csv"] and after.unreported() == {}
    assert set(after.entries) == {"a.csv", "b.csv"}  # b.csv was not read: its stat matched
    store = StateFiles(tmp_path / "state")
    assert store.load_index(store.save_index(after)).entries == after.entries
    assert store.load_index("0" * 32) is None


def test_the_listing_finds_what_discover_finds(tmp_path):
    data = tmp_path / "data"
    for rel in ("a.csv", "sub/b.json", "sub/deep/c.tsv", "README.md", "schema.sql", ".hidden.csv",
                ".git/x.csv", "~$lock.xlsx", "sub/notes.yaml", "d.unknown"):
        write_old(data / rel, "x")
    (data / "inside.csv").symlink_to(data / "a.csv")
    (data / "outside.csv").symlink_to(tmp_path / "secret.csv")
    write_old(tmp_path / "secret.csv", "x")
    (data / "broken.csv").symlink_to(data / "nothing.csv")
    (data / "linked_dir").symlink_to(data / "sub")
    os.mkfifo(data / "pipe.csv")
    listed = [item.path for item in local_listing(data)]
    assert listed == sorted(str(raw.path.relative_to(data)) for raw in discover(data))
    assert "inside.csv" in listed and "outside.csv" not in listed and "d.unknown" in listed


def test_the_cursor_stays_small_at_many_files(env):
    data, ws = env
    n = INLINE_MAX + 200
    for i in range(n):
        write_old(data / f"f{i:05d}.csv", f"id\n{i}\n")
    first = new_data_sensor(build_sensor_context())
    store = StateFiles(Workspace(ws).sensor_index)
    assert len(first.cursor) < 2000  # the maps of 1,200 files are beside it (was ~120 KB)
    cursor = DataCursor.parse(first.cursor, store)
    assert len(cursor.pending.snapshot) == n and cursor.pending.snapshot["f00007.csv"] == content_hash(data / "f00007.csv")
    with pytest.raises(ValueError, match="StateFiles"):
        DataCursor.parse(first.cursor)
    # the same tick from the same cursor asks for the same run (the maps round-trip)
    again = new_data_sensor(build_sensor_context(cursor=first.cursor))
    assert not getattr(again, "run_requests", None) and "no change" in again.skip_reason.skip_message
    # a workspace cleared of its state: the cursor cannot be read, the tick starts over
    for path in store.folder.glob("snapshot-*"):
        path.unlink()
    assert DataCursor.parse(first.cursor, store) is None
    restart = new_data_sensor(build_sensor_context(cursor=first.cursor))
    assert restart.run_requests and restart.run_requests[0].run_key == first.run_requests[0].run_key


def test_reported_versions_are_read_in_batches_as_one_by_one(tmp_path):
    """The first tick over a folder checks every file against the instance: in a few queries."""
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("raw_files", [f"k{i}" for i in range(7)])
    path = tmp_path / "f.csv"
    write_old(path, "id\n1\n")
    for i in range(5):
        for event in raw_events(f"k{i}", path, f"v{i}"):
            instance.report_runless_asset_event(event)
    for event in raw_events("k1", path, "v1-later"):  # reported again: the latest counts
        instance.report_runless_asset_event(event)
    keys = {f"k{i}" for i in range(7)}
    expected = {key: latest_raw_version(instance, key) for key in keys}
    assert expected["k1"] == "v1-later" and expected["k6"] is None
    assert latest_raw_versions(instance, keys, batch=2) == expected  # all partitions listed, 2 records a query
    assert latest_raw_versions(instance, {"k1", "k6"}, batch=2) == {"k1": "v1-later", "k6": None}
