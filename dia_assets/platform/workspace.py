"""The workspace W (DESIGN §4) as code: every file the agents hand each other, named once.

Agents communicate through files in one folder, so the folder's layout is a contract between
them. Each path is an attribute here (`Workspace(root).manifest`, `.query(qid).sql`), and no
module joins `"schema"/"manifest.json"` itself:

    interpretation.json, interpretation.md
    review/      interpretation_overrides.yaml (expert corrections), drift_review.md
    schema/      manifest.json, ddl.sql, load.sql, er.mmd, lineage.json, installed_manifest.json,
                 load_result.json, table_stats.json
    validation/  report.json, report.md
    queries/<question_id>/   query.sql, result.json, result.parquet, trace.json, answer.md, chart.*
    analysis/<question_id>/  analysis.json, pipeline.json, steps.duckdb
    drift/ diagnosis/ history/ lineage/ catalog/ memory/ state/ pgdata/ .dagster/
    dbt/         a dbt project's build on a copy of the warehouse (DIA_DBT_PROJECT)
    warehouse.duckdb         the default warehouse

A path is only a name: nothing is created or read, unless `create=True`, which makes each file's
parent folder when the path is asked for (what an asset that writes the file needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class QueryFiles:
    """One question's folder under `queries/`: the answer the Query Agent wrote."""

    folder: Path

    @property
    def answer(self) -> Path:
        """answer.md: the answer as a reader sees it."""
        return self.folder / "answer.md"

    @property
    def result(self) -> Path:
        """result.json: the QueryResult contract."""
        return self.folder / "result.json"

    @property
    def sql(self) -> Path:
        return self.folder / "query.sql"

    @property
    def parquet(self) -> Path:
        return self.folder / "result.parquet"

    @property
    def trace(self) -> Path:
        return self.folder / "trace.json"

    @property
    def chart(self) -> Path:
        """chart.json: the chart spec; its images are chart.png and chart.svg beside it."""
        return self.folder / "chart.json"

    @property
    def chart_png(self) -> Path:
        return self.folder / "chart.png"

    @property
    def chart_svg(self) -> Path:
        return self.folder / "chart.svg"


@dataclass(frozen=True)
class AnalysisFiles:
    """One analysis question's folder under `analysis/`."""

    folder: Path

    @property
    def result(self) -> Path:
        """analysis.json: the AnalysisResult contract."""
        return self.folder / "analysis.json"

    @property
    def pipeline(self) -> Path:
        return self.folder / "pipeline.json"

    @property
    def steps(self) -> Path:
        """steps.duckdb: every step's table, exported from the session."""
        return self.folder / "steps.duckdb"


SESSION_FILE = "_session.json"


@dataclass(frozen=True)
class Workspace:
    """The workspace tree under `root`. `create=True` makes a file's parent folder (or a
    question's folder) when its path is asked for."""

    root: Path
    create: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))  # a str root is accepted

    def _file(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        if self.create:
            path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _dir(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        if self.create:
            path.mkdir(parents=True, exist_ok=True)
        return path

    # the Data Interpreter's output, reviewed by an expert
    @property
    def interpretation(self) -> Path:
        return self._file("interpretation.json")

    @property
    def interpretation_md(self) -> Path:
        return self._file("interpretation.md")

    @property
    def previous_interpretation(self) -> Path:
        """The interpretation the drift sensor compared against last time."""
        return self._file("history", "interpretation.previous.json")

    @property
    def review_dir(self) -> Path:
        return self.root / "review"

    @property
    def overrides(self) -> Path:
        """Expert corrections to the interpretation; agents never overwrite them."""
        return self._file("review", "interpretation_overrides.yaml")

    @property
    def drift_review(self) -> Path:
        return self._file("review", "drift_review.md")

    # the Schema Creator's plan and build
    @property
    def schema_dir(self) -> Path:
        return self.root / "schema"

    @property
    def manifest(self) -> Path:
        """The manifest of the last build (installed or not)."""
        return self._file("schema", "manifest.json")

    @property
    def installed_manifest(self) -> Path:
        """The manifest of the warehouse in place (incremental reloads start from it)."""
        return self._file("schema", "installed_manifest.json")

    @property
    def ddl(self) -> Path:
        return self._file("schema", "ddl.sql")

    @property
    def load(self) -> Path:
        return self._file("schema", "load.sql")

    @property
    def er(self) -> Path:
        """The Mermaid ER diagram."""
        return self._file("schema", "er.mmd")

    @property
    def schema_lineage(self) -> Path:
        """Column lineage of the build (refined column <- file column)."""
        return self._file("schema", "lineage.json")

    @property
    def load_result(self) -> Path:
        return self._file("schema", "load_result.json")

    @property
    def table_stats(self) -> Path:
        """Cached figures of the installed warehouse's tables."""
        return self._file("schema", "table_stats.json")

    @property
    def validation_dir(self) -> Path:
        return self.root / "validation"

    @property
    def report(self) -> Path:
        """The validation report of the last build."""
        return self._file("validation", "report.json")

    @property
    def report_md(self) -> Path:
        return self._file("validation", "report.md")

    # build state: one writer at a time, and what a killed build left
    @property
    def pending_install(self) -> Path:
        return self._file("state", "pending_install.json")

    @property
    def writer_lock(self) -> Path:
        return self._file("state", "writer.lock")

    @property
    def attempt(self) -> Path:
        return self._file("state", "attempt.json")

    @property
    def last_error(self) -> Path:
        return self._file("state", "last_error.txt")

    @property
    def sensor_index(self) -> Path:
        """The folder of the data sensor's stat index (agents/adaptation/folder_index.py)."""
        return self.root / "state" / "sensor"

    @property
    def warehouse(self) -> Path:
        """The default warehouse (DIA_WAREHOUSE can name another)."""
        return self._file("warehouse.duckdb")

    @property
    def dbt_build(self) -> Path:
        """Where a dbt project's build runs (DIA_DBT_PROJECT): a copy of the warehouse, its profile, target/."""
        return self._dir("dbt")

    # answers
    @property
    def queries_dir(self) -> Path:
        return self.root / "queries"

    def query(self, question_id: str) -> QueryFiles:
        """One question's folder; the id is used as given (callers check it first)."""
        return QueryFiles(self._dir("queries", question_id))

    def saved_answers(self) -> list[Path]:
        """Every saved answer's result.json, in question-id order."""
        return sorted(self.queries_dir.glob("*/result.json"))

    @property
    def session(self) -> Path:
        """The CLI's conversation state (`dia ask --session`)."""
        return self._file("queries", SESSION_FILE)

    def analysis(self, question_id: str) -> AnalysisFiles:
        return AnalysisFiles(self._dir("analysis", question_id))

    # adaptation, lineage, catalog, memory
    @property
    def drift_dir(self) -> Path:
        """One JSON file per drift the sensor saw."""
        return self._dir("drift")

    @property
    def diagnosis_dir(self) -> Path:
        return self._dir("diagnosis")

    @property
    def lineage_index(self) -> Path:
        return self._file("lineage", "lineage.json")

    @property
    def lineage_report(self) -> Path:
        return self._file("lineage", "report.md")

    @property
    def catalog(self) -> Path:
        return self._file("catalog", "semantic_catalog.json")

    @property
    def lessons(self) -> Path:
        """The memory's lessons, exported for a reader."""
        return self._file("memory", "lessons.md")

    @property
    def pgdata(self) -> Path:
        """The embedded PostgreSQL's data folder (shared memory, DESIGN §6)."""
        return self.root / "pgdata"

    @property
    def dagster_home(self) -> Path:
        return self.root / ".dagster"

    @property
    def mcp_token(self) -> Path:
        return self._file("mcp_token")
