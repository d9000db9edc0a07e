"""dbt project completion (issue 34): Spider2-DBT's task layout and `duckdb_match` scoring, the
agent's loop through the model door, the gate around the scratch copy, and the oracle scoring
100% on instances generated from two vendored datasets (hr, northwind). dbt runs for real, in a
child process per call (each costs seconds: the module takes about two to four minutes)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from dia_assets.agents.dbt_completion.loop import complete_project
from dia_assets.agents.dbt_completion.oracle import solution_files
from dia_assets.agents.dbt_completion.runner import run_task
from dia_assets.agents.dbt_completion.scoring import MatchSpec, compare_table, duckdb_match
from dia_assets.agents.dbt_completion.scratch import Refused, ScratchProject, dbt_argv
from dia_assets.agents.dbt_completion.tasks import load_tasks
from dia_assets.cli.app import app
from dia_assets.pipeline import run
from dia_assets.platform.model.litellm import litellm_chat
from dia_assets.platform.model.scripted import FAKE_MODEL, call
from tests import fake_llm

pytestmark = pytest.mark.heavy
DATASETS = Path(__file__).parent / "fixtures" / "datasets"


def _tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def taskset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten instances: hr and northwind built by DIA, each exported by `dia dbt export` and
    turned into five tasks by `dia dbt tasks`."""
    root = tmp_path_factory.mktemp("dbt_tasks")
    made = []
    for name in ("hr", "northwind"):
        ws = root / f"ws_{name}"
        assert run(DATASETS / name / "raw", ws).report.accepted
        out = CliRunner().invoke(app, ["dbt", "tasks", str(root / name), "--name", name, "-n", "5",
                                       "-w", str(ws), "--json", "-q"])
        assert out.exit_code == 0, out.output
        made.append(root / name)
    # one set of ten: both sets' lines in one pair of JSONL files, their folders side by side
    merged = root / "spider2-dbt"
    for sub in ("examples", "evaluation_suite/gold"):
        (merged / sub).mkdir(parents=True)
        for part in made:
            for item in (part / sub).iterdir():
                if item.is_dir():
                    item.rename(merged / sub / item.name)
    for rel in ("examples/spider2-dbt.jsonl", "evaluation_suite/gold/spider2_eval.jsonl"):
        (merged / rel).write_text("".join((part / rel).read_text() for part in made))
    return merged


def test_generated_instances_follow_the_layout_and_are_not_already_solved(taskset: Path) -> None:
    tasks = load_tasks(taskset)
    assert len(tasks) == 10 and len({t.instance_id for t in tasks}) == 10
    for task in tasks:
        tabs = task.spec.condition_tabs or []
        assert 1 <= len(tabs) <= 3 and task.instruction and task.gold_db.is_file()
        assert all(t in task.instruction for t in tabs)
        # the project as handed over scores 0: each table to complete is missing there
        before = duckdb_match(task.project_db(), task.gold_db, task.spec)
        assert before.score == 0 and set(before.tables.values()) == {"missing"}, task.instance_id
        files = solution_files(task.solution)
        assert len(files) == len(tabs)
        for rel in files:  # removed, or left as a stub that is not the gold
            model = task.project / rel
            assert not model.exists() or model.read_text() != files[rel]
    assert {len(t.spec.condition_tabs or []) for t in tasks} == {1, 2, 3}


def test_oracle_scores_100_percent_through_dia_eval(taskset: Path, tmp_path: Path) -> None:
    before = _tree_hash(taskset / "examples")
    out = CliRunner().invoke(app, ["eval", "--tasks", "spider2-dbt", str(taskset / "examples" / "spider2-dbt.jsonl"),
                                   "--model", "oracle", "-o", str(tmp_path / "run"), "--json", "-q"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["instances"] == 10 and summary["correct"] == 10 and summary["score"] == 100.0, summary
    assert summary["refusals"] == 0 and summary["status_counts"] == {"finished": 10}
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert all(set(r["tables"].values()) == {"match"} for r in records)
    assert _tree_hash(taskset / "examples") == before  # the given projects are never written


def _wrong(files: dict[str, str]) -> dict[str, str]:
    """Each gold model, built but empty."""
    return {rel: f"select * from (\n{sql}) g where false\n" for rel, sql in files.items()}


def test_a_model_that_writes_a_wrong_model_scores_zero(taskset: Path, tmp_path: Path) -> None:
    task = load_tasks(taskset)[0]
    files = _wrong(solution_files(task.solution))
    scripted = fake_llm.register([
        *(call("write_file", path=rel, content=sql) for rel, sql in files.items()),
        call("run_dbt", command="run --select " + " ".join(Path(r).stem for r in files)),
        call("finish", message="done")])
    record = run_task(task, FAKE_MODEL, tmp_path)
    assert record["status"] == "finished" and record["last_dbt_ok"] is True and record["dbt_runs"] == 1
    assert record["score"] == 0 and set(record["tables"].values()) == {"differs"}, record
    # the requests went through litellm: the model saw the instruction and the tools
    assert task.instruction in scripted.sent() and {"write_file", "run_dbt", "query"} <= {
        t["function"]["name"] for t in scripted.requests[0]["tools"]}


# ---------------------------------------------------------------- the scorer (Spider2's duckdb_match)


def _db(path: Path, **tables: str) -> Path:
    with duckdb.connect(str(path)) as con:
        for name, sql in tables.items():
            con.execute(f"CREATE TABLE {name} AS {sql}")
    return path


GOLD = "SELECT * FROM (VALUES (1, 'a', 10.0), (2, 'b', 20.0), (3, NULL, 30.0)) t(id, name, amount)"


@pytest.fixture
def gold(tmp_path: Path) -> Path:
    return _db(tmp_path / "gold.duckdb", t=GOLD, other="SELECT 1 AS x")


def test_benchmark_spec_lines_are_read_as_written() -> None:
    line = ('{"instance_id": "provider001", "evaluation": {"func": "duckdb_match", "parameters": {"gold": '
            '"provider.duckdb", "condition_tabs": ["specialty_mapping", "provider"], "condition_cols": '
            '[[0, 1], [0, 1, 2, 5]], "ignore_orders": [true, true]}}}')
    spec = MatchSpec.from_json(json.loads(line)["evaluation"]["parameters"])
    assert spec.condition_tabs == ["specialty_mapping", "provider"] and spec.condition_cols == [[0, 1], [0, 1, 2, 5]]
    assert MatchSpec.from_json(spec.as_json()["parameters"]) == spec


def test_scorer_same_table_matches_and_a_missing_table_scores_zero(gold: Path, tmp_path: Path) -> None:
    same = _db(tmp_path / "same.duckdb", t=GOLD)
    assert duckdb_match(same, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).score == 1
    missing = duckdb_match(same, gold, MatchSpec("gold.duckdb", ["t", "other"], [[], []], [True, True]))
    assert missing.score == 0 and missing.tables == {"t": "match", "other": "missing"}
    # no condition_tabs: every table of the gold, as the benchmark does
    assert duckdb_match(same, gold, MatchSpec("gold.duckdb")).score == 0


def test_scorer_a_wrong_value_scores_zero(gold: Path, tmp_path: Path) -> None:
    wrong = _db(tmp_path / "wrong.duckdb", t=GOLD.replace("20.0", "20.5"))
    assert duckdb_match(wrong, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).tables == {"t": "differs"}
    near = _db(tmp_path / "near.duckdb", t=GOLD.replace("20.0", "20.005"))  # within the benchmark's 0.01
    assert duckdb_match(near, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).score == 1
    assert not compare_table([(1,)], [(None,)]) and compare_table([(None,)], [(None,)])


def test_scorer_extra_and_renamed_columns_pass_unless_a_condition_column_differs(gold: Path, tmp_path: Path) -> None:
    extra = _db(tmp_path / "extra.duckdb", t="SELECT amount AS total, 'x' AS note, name AS label, id AS key "
                f"FROM ({GOLD})")
    assert duckdb_match(extra, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).score == 1
    # the name column wrong: fails with every column compared, passes when condition_cols leave it out
    bad_name = _db(tmp_path / "bad.duckdb", t=GOLD.replace("'b'", "'B'"))
    assert duckdb_match(bad_name, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).score == 0
    assert duckdb_match(bad_name, gold, MatchSpec("gold.duckdb", ["t"], [[0, 2]], [True])).score == 1
    assert duckdb_match(bad_name, gold, MatchSpec("gold.duckdb", ["t"], [[1]], [True])).score == 0


def test_scorer_row_order_matters_unless_ignored(gold: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "rev.duckdb")) as con:
        con.execute("CREATE TABLE t (id INT, name TEXT, amount DOUBLE)")
        con.execute("INSERT INTO t VALUES (3, NULL, 30.0), (2, 'b', 20.0), (1, 'a', 10.0)")
    rev = tmp_path / "rev.duckdb"
    assert duckdb_match(rev, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).score == 1
    assert duckdb_match(rev, gold, MatchSpec("gold.duckdb", ["t"], [[]], [False])).score == 0
    fewer = _db(tmp_path / "fewer.duckdb", t=f"SELECT * FROM ({GOLD}) WHERE id < 3")
    assert duckdb_match(fewer, gold, MatchSpec("gold.duckdb", ["t"], [[]], [True])).score == 0


# ---------------------------------------------------------------- the gate


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny dbt project with its DuckDB file, and a folder outside it."""
    p = tmp_path / "given"
    (p / "models").mkdir(parents=True)
    (p / "dbt_project.yml").write_text("name: tiny\nversion: '1.0.0'\nconfig-version: 2\nprofile: tiny\n"
                                       "models:\n  tiny:\n    +materialized: table\n")
    (p / "models" / "ok.sql").write_text("select 1 as a\n")
    duckdb.connect(str(p / "tiny.duckdb")).close()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.sql").write_text("select 'secret'")
    return p


@pytest.fixture
def scratch(project: Path, tmp_path: Path) -> ScratchProject:
    s = ScratchProject(project, project / "tiny.duckdb", tmp_path / "work")
    os.symlink(tmp_path / "outside", s.root / "models" / "link")
    return s


@pytest.mark.parametrize("path", ["../given/models/x.sql", "/etc/passwd", "models/../../x.sql", "models/link/secret.sql",
                                  "models/link/new.sql", "dbt_project.yml", "profiles.yml", "models/x.py",
                                  "macros/x.sql", "packages.yml", "models"])
def test_writes_outside_models_sql_yml_are_refused(scratch: ScratchProject, path: str) -> None:
    with pytest.raises(Refused):
        scratch.write_file(path, "select 1")
    assert not (scratch.work.parent / "outside" / "new.sql").exists()


@pytest.mark.parametrize("path", ["../given/dbt_project.yml", "/etc/hostname", "models/link/secret.sql", "tiny.duckdb"])
def test_reads_outside_the_copy_or_of_the_database_file_are_refused(scratch: ScratchProject, path: str) -> None:
    with pytest.raises(Refused):
        scratch.read_file(path)
    assert "models/link/secret.sql" not in scratch.list_files()


def test_writes_inside_models_are_allowed(scratch: ScratchProject, project: Path) -> None:
    assert scratch.write_file("models/sub/new.sql", "select 2 as b") == "models/sub/new.sql"
    assert scratch.write_file("./models/schema.yml", "version: 2\n") == "models/schema.yml"
    assert scratch.read_file("models/sub/new.sql") == "select 2 as b"
    assert not (project / "models" / "sub").exists()  # the copy, never the given project


@pytest.mark.parametrize("command", ["run-operation drop_everything", "deps", "seed", "debug", "source freshness",
                                     "docs generate", "", "build --vars {a: 1}", "build --profiles-dir /tmp",
                                     "build --project-dir /elsewhere", "build; rm -rf /", "run --select a;b",
                                     "build --select $(id)", "bash -c ls", "test --target prod"])
def test_dbt_commands_outside_the_allow_list_are_refused(command: str) -> None:
    with pytest.raises(Refused):
        dbt_argv(command)


def test_dbt_commands_on_the_allow_list() -> None:
    assert dbt_argv("build") == ["build"]
    assert dbt_argv("dbt run --select a b+ --exclude c") == ["run", "--select", "a", "b+", "--exclude", "c"]
    assert dbt_argv(["test", "-s", "tag:x"]) == ["test", "-s", "tag:x"]


@pytest.mark.parametrize("sql", ["DELETE FROM ok", "CREATE TABLE x AS SELECT 1", "ATTACH 'x.duckdb' AS x",
                                 "SELECT 1; SELECT 2", "COPY (SELECT 1) TO 'out.csv'", "DROP TABLE ok",
                                 "INSTALL httpfs", "SET enable_external_access = true", "PRAGMA version"])
def test_queries_other_than_one_select_are_refused(scratch: ScratchProject, sql: str) -> None:
    with pytest.raises(Refused):
        scratch.query(sql)


def test_a_select_cannot_read_files(scratch: ScratchProject) -> None:
    assert "error" in scratch.query("SELECT * FROM read_csv('/etc/hostname')")
    assert scratch.query("SELECT 42 AS x") == {"columns": ["x"], "rows": [[42]], "truncated": False}


def test_the_loop_returns_refusals_to_the_model(scratch: ScratchProject) -> None:
    """Through the model door: each refused call is counted and shown to the model; nothing ran."""
    fake_llm.register([call("write_file", path="../escape.sql", content="select 1"),
                       call("run_dbt", command="run-operation x"), call("query", sql="DROP TABLE ok"),
                       call("read_file", path="models/ok.sql"), call("finish", message="gave up")])
    done = complete_project(litellm_chat(FAKE_MODEL), scratch, "complete it")
    assert done.status == "finished" and done.refusals == 3 and done.dbt_runs == 0
    assert [s["refused"] for s in done.steps] == [True, True, True, False, False]
    assert "refused" in done.steps[0]["result"] and done.steps[3]["result"] == "select 1 as a\n"
    assert not (scratch.root.parent / "escape.sql").exists()


def test_dbt_builds_only_the_copy_with_external_access_off(project: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A model cannot ATTACH another DuckDB file, read or write a file, nor read our environment
    (an API key); dbt writes the copy's own DuckDB file, never the given project's."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-models")
    other = _db(tmp_path / "installed.duckdb", t="SELECT 1 AS x")
    before = other.read_bytes()
    s = ScratchProject(project, project / "tiny.duckdb", tmp_path / "work")
    s.write_file("models/attach.sql", "{{ config(pre_hook=\"ATTACH '" + str(other) + "' AS w\") }} select 2 as b")
    s.write_file("models/reads.sql", "select * from read_csv('" + str(tmp_path / "outside" / "secret.sql") + "')")
    s.write_file("models/writes.sql", "{{ config(post_hook=\"COPY (select 1) TO '" + str(tmp_path / "out.csv")
                 + "'\") }} select 3 as c")
    s.write_file("models/env.sql", "select '{{ env_var(\"OPENAI_API_KEY\", \"absent\") }}' as k")
    done = s.dbt("run")
    assert done.returncode == 1 and done.statuses == {
        "model.tiny.ok": "success", "model.tiny.env": "success", "model.tiny.attach": "error", "model.tiny.reads": "error",
        "model.tiny.writes": "error"}, done.output
    assert done.output.count("disabled by configuration") >= 2 or "Permission Error" in done.output
    assert other.read_bytes() == before and not (tmp_path / "out.csv").exists()
    assert s.query("SELECT a FROM ok")["rows"] == [[1]] and s.query("SELECT k FROM env")["rows"] == [["absent"]]
    with duckdb.connect(str(project / "tiny.duckdb"), read_only=True) as con:
        assert con.execute("SHOW TABLES").fetchall() == []  # the given database untouched


