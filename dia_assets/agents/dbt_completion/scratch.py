"""The gate around the agent: a scratch copy of the project with its own DuckDB file, and the
only things the agent may do to it.

- Read and list files inside the copy; write only `.sql`, `.yml`, `.yaml` files under
  `models/`. A path is relative, has no `..`, passes through no symlink and resolves inside
  the copy.
- Run dbt `build`, `run` or `test` on the copy, with only `--select`/`--exclude` and a few
  flags (an allow-list; no `run-operation`, `deps`, `seed`, `--vars`, `--profiles-dir`, no
  shell). dbt gets no environment variable of ours but PATH, locale and TMPDIR (a model can
  read them with `env_var`), and reads a profile the harness writes outside the copy, which points dbt-duckdb at
  the copy's DuckDB file with external access off (no ATTACH of another file, no file or
  network reads or writes from SQL) and the configuration locked; usage statistics off.
- Query the copy's DuckDB file read-only, one SELECT at a time, external access off.

Nothing the agent does reaches the project it was given, nor any other database.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import duckdb
import yaml

DBT_COMMANDS = ("build", "run", "test")
VALUE_FLAGS = ("--select", "-s", "--exclude", "--models", "-m")
BARE_FLAGS = ("--full-refresh", "--fail-fast", "-x", "--quiet", "-q")
SELECTOR = re.compile(r"^[A-Za-z0-9_.*+:@/,-]+$")
WRITABLE_SUFFIXES = (".sql", ".yml", ".yaml")
WRITABLE_ROOT = "models"
MAX_FILE_CHARS = 200_000
MAX_ROWS = 50
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")
LOCKED_SETTINGS = {"enable_external_access": False}  # once off, DuckDB cannot turn it back on


class Refused(ValueError):
    """What the agent asked for is outside the gate; the message says why (it is shown to the model)."""


@dataclass
class DbtRun:
    command: list[str]
    returncode: int
    statuses: dict[str, str]
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def dbt_argv(command: str | list[str]) -> list[str]:
    """The allow-listed dbt arguments of `command` ("build --select x"), or Refused."""
    args = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if args[:1] == ["dbt"]:
        args = args[1:]
    if not args or args[0] not in DBT_COMMANDS:
        raise Refused(f"only `dbt {'|'.join(DBT_COMMANDS)}` may run; got {' '.join(args[:1]) or 'nothing'!r}")
    i = 1
    while i < len(args):
        arg = args[i]
        if arg in VALUE_FLAGS:
            values = []
            while i + 1 < len(args) and not args[i + 1].startswith("-"):
                i += 1
                values.append(args[i])
            if not values or not all(SELECTOR.match(v) for v in values):
                raise Refused(f"{arg} takes model names or selectors (letters, digits, _ . * + : @ / , -)")
        elif arg not in BARE_FLAGS:
            raise Refused(f"dbt option {arg!r} is not allowed (allowed: {', '.join(VALUE_FLAGS + BARE_FLAGS)})")
        i += 1
    return args


class ScratchProject:
    """A copy of `project` in `work/project` (symlinks copied as their content), its DuckDB
    file beside it, and the profile dbt reads in `work/profiles`, outside the copy."""

    def __init__(self, project: Path, database: Path, work: Path, schema: str = "main") -> None:
        self.work = work = Path(work).resolve()  # dbt runs with the copy as its working folder
        self.root = work / "project"
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(project, self.root, symlinks=False,
                        ignore=shutil.ignore_patterns("target", "logs", "dbt_packages", "*.duckdb.wal"))
        self.database = (self.root / database.name).resolve()
        if not self.database.exists():
            shutil.copy2(database, self.database)
        self.profiles = work / "profiles"
        self.profiles.mkdir(parents=True, exist_ok=True)
        profile = (yaml.safe_load((self.root / "dbt_project.yml").read_text(encoding="utf-8")) or {}).get("profile")
        if not profile:
            raise ValueError(f"{project}/dbt_project.yml names no profile")
        (self.profiles / "profiles.yml").write_text(yaml.safe_dump({profile: {"target": "scratch", "outputs": {
            "scratch": {"type": "duckdb", "path": str(self.database), "schema": schema, "threads": 1,
                        "settings": dict(LOCKED_SETTINGS)}}}}), encoding="utf-8")

    # ------------------------------------------------------------------ paths

    def path(self, rel: str, write: bool = False) -> Path:
        """`rel` inside the copy, or Refused."""
        if not isinstance(rel, str) or not rel.strip():
            raise Refused("a path relative to the project is required")
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or re.match(r"^[A-Za-z]:", rel):
            raise Refused(f"{rel!r}: absolute paths are refused; give a path relative to the project")
        if ".." in pure.parts:
            raise Refused(f"{rel!r}: '..' is refused")
        here = self.root
        for part in pure.parts:
            if part in ("", "."):
                continue
            here = here / part
            if here.is_symlink():
                raise Refused(f"{rel!r}: passes through a symlink")
        resolved = here.resolve()
        if not resolved.is_relative_to(self.root.resolve()):
            raise Refused(f"{rel!r}: outside the project")
        if write:
            inner = resolved.relative_to(self.root.resolve()).parts
            if not inner or inner[0] != WRITABLE_ROOT or resolved.suffix.lower() not in WRITABLE_SUFFIXES:
                raise Refused(f"{rel!r}: only {', '.join(WRITABLE_SUFFIXES)} files under {WRITABLE_ROOT}/ may be written")
        return resolved

    def list_files(self, rel: str = ".") -> list[str]:
        base = self.path(rel)
        if not base.is_dir():
            raise Refused(f"{rel!r} is not a folder of the project")
        root = self.root.resolve()
        out = []
        for p in sorted(base.rglob("*")):
            if p.is_file() and not p.is_symlink() and not ({"target", "logs"} & set(p.relative_to(root).parts)):
                out.append(p.relative_to(root).as_posix())
        return out

    def read_file(self, rel: str) -> str:
        path = self.path(rel)
        if not path.is_file():
            raise Refused(f"{rel!r}: no such file")
        if path.suffix == ".duckdb":
            raise Refused(f"{rel!r}: the database is read with the query tool")
        text = path.read_text(encoding="utf-8", errors="replace")
        return text if len(text) <= MAX_FILE_CHARS else text[:MAX_FILE_CHARS] + "\n... (cut)"

    def write_file(self, rel: str, content: str) -> str:
        path = self.path(rel, write=True)
        if not isinstance(content, str) or len(content) > MAX_FILE_CHARS:
            raise Refused("content must be text of at most 200,000 characters")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return path.relative_to(self.root.resolve()).as_posix()

    # ------------------------------------------------------------------ dbt and the database

    def dbt(self, command: str | list[str], timeout_s: float = 600.0) -> DbtRun:
        """Run allow-listed dbt on the copy in a child process (dbt-duckdb holds its file for
        the life of the process), offline."""
        args = dbt_argv(command)
        # a model can read the environment (`env_var`): dbt gets none of ours (no API keys)
        env = {k: v for k, v in os.environ.items() if k in PASSED_ENV}
        env.update(HOME=str(self.work), DBT_SEND_ANONYMOUS_USAGE_STATS="false", DBT_USE_COLORS="false",
                   DBT_PROFILES_DIR=str(self.profiles))
        target = self.work / "target"
        results = target / "run_results.json"
        results.unlink(missing_ok=True)
        argv = [sys.executable, "-c", "from dbt.cli.main import cli; cli()", *args,
                "--project-dir", str(self.root), "--profiles-dir", str(self.profiles),
                "--target-path", str(target), "--log-path", str(self.work / "logs")]
        try:
            done = subprocess.run(argv, env=env, cwd=self.root, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return DbtRun(args, -1, {}, f"dbt {' '.join(args)} timed out after {timeout_s:.0f} s")
        statuses: dict[str, str] = {}
        if results.exists():
            import json

            statuses = {r["unique_id"]: r["status"] for r in json.loads(results.read_text())["results"]}
        return DbtRun(args, done.returncode, statuses, _tail(done.stdout + done.stderr))

    def query(self, sql: str) -> dict[str, Any]:
        """One read-only SELECT on the copy's database, at most `MAX_ROWS` rows."""
        import sqlglot
        from sqlglot import exp

        try:
            statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
        except sqlglot.errors.SqlglotError as err:
            raise Refused(f"cannot parse the query: {str(err)[:300]}") from err
        if len(statements) != 1 or not isinstance(statements[0], exp.Query):
            raise Refused("one SELECT statement at a time")
        with duckdb.connect(str(self.database), read_only=True, config=dict(LOCKED_SETTINGS)) as con:
            try:
                cur = con.execute(sql)
                rows = cur.fetchmany(MAX_ROWS + 1)
            except duckdb.Error as err:
                return {"error": str(err)[:1000]}
            columns = [d[0] for d in cur.description or []]
        return {"columns": columns, "rows": [list(map(_plain, r)) for r in rows[:MAX_ROWS]],
                "truncated": len(rows) > MAX_ROWS}


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, (int, float, str, bool)) else str(v)


def _tail(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]
