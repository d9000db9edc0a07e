"""Every `DIA_*` environment variable in one typed object, validated once.

Code asks `get_settings().<name>` instead of reading `os.environ`, so a bad value fails at
start with one line naming the variable and what it accepts
(`DIA_SENSOR_INTERVAL_S=abc: expected an integer >= 1 (seconds between sensor evaluations)`)
instead of a traceback deep in a sensor. The object is cached and rebuilt only when the
`DIA_*` part of the environment changed: the CLI's `-w` and tests set variables at run time.
An empty variable counts as unset (the default applies), as it always did."""

from __future__ import annotations

import os
import re
import threading
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import AfterValidator, BeforeValidator, ByteSize, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PREFIX = "DIA_"
_SIZE = re.compile(r"^\d+(\.\d+)?\s*(%|[kmgt]i?b?|b|bytes|kilobytes|megabytes|gigabytes|terabytes)$", re.I)


class SettingsError(ValueError):
    """A `DIA_*` variable has a value DIA cannot use; the message is one line naming it."""


def _memory_size(value: str) -> str:
    """A size DuckDB accepts (`2GB`, `512MiB`, `80%`), kept as written for DuckDB."""
    if not _SIZE.match(value):
        raise ValueError("not a memory size")
    return value


def _privacy(value: Any) -> Any:
    """`schema_only`, `Schema-Only` and `schema` all mean `schema-only` (as before)."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower().replace("_", "-")
    return "schema-only" if text == "schema" else text


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


MemorySize = Annotated[str, AfterValidator(_memory_size)]
Privacy = Annotated[Literal["schema-only", "aggregates", "samples"], BeforeValidator(_privacy)]
def _executor(value: str) -> str:
    """`in_process`, `multiprocess`, or `module:attribute` naming any Dagster executor."""
    text = value.strip()
    if text.lower() in ("in_process", "multiprocess"):
        return text.lower()
    if re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", text):
        return text
    raise ValueError("not an executor")


Executor = Annotated[str, AfterValidator(_executor)]


def _location(value: Any) -> Any:
    """A local folder (a Path) or an object-store URL kept as written (`Path` would fold `s3://`)."""
    if isinstance(value, str) and re.match(r"^s3://[^/\s]+", value.strip(), re.I):
        return value.strip()
    return Path(value) if isinstance(value, str) else value


# a folder that may live on object storage: platform/files/object_store.py mirrors it
Location = Annotated[Path | str, BeforeValidator(_location)]


def _cron(value: str) -> str:
    if len(value.split()) != 5:
        raise ValueError("not a cron expression")
    return value


Cron = Annotated[str, AfterValidator(_cron)]


def _desc(default: str, text: str, kind: str) -> Any:
    """A field whose type cannot say what it accepts (sizes, crons): the expectation rides along."""
    return Field(default, description=text, json_schema_extra={"expect": kind})


class Settings(BaseSettings):
    """The effective configuration. Field `x` is the variable `DIA_X`."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, str_strip_whitespace=True,
                                      extra="ignore", frozen=True)

    # where things live
    workspace: Location = Field(Path("dia_workspace"), description="artifact root: warehouse, reports, memory "
                                "store", json_schema_extra={"expect": "location"})
    data_dir: Location = Field(Path("examples/data"), description="folder of raw files to interpret",
                               json_schema_extra={"expect": "location"})
    object_cache: Path | None = Field(None, description="local folder of the copies of s3:// data folders and "
                                      "workspaces; unset: dia-objects-<uid> in the temporary directory")
    warehouse: str | None = Field(None, description="DuckDB or SQLite file, postgresql:// URL, or spark://MASTER/ROOT; unset: <workspace>/warehouse.duckdb")
    questions: Path | None = Field(None, description="questions file; unset: <data dir>/questions.yaml if present, else none")
    dagster_home: Path | None = Field(None, description="Dagster instance folder for `dia ui` and `dia demo` "
                                      "when DAGSTER_HOME is unset; unset: <workspace>/.dagster")
    # models
    model: str | None = Field(None, description="litellm model of the agents; unset: no model calls")
    semantic_light_model: str | None = Field(None, description="cheaper first stage of the semantic operators")
    semantic_strong_model: str | None = Field(None, description="strong stage of the semantic operators; unset: DIA_MODEL")
    chart_model: str | None = Field(None, description="litellm model that reviews chart choices; unset: rules only")
    embedding_model: str = Field("wordllama", description="embedding model of the memory store: "
                                 "wordllama (offline) or a litellm model")
    model_fallbacks: str | None = Field(None, description="comma-separated litellm models tried when the model fails")
    model_retries: int = Field(2, ge=0, description="retries of a model call on a transient error, HTTP 503")
    model_rate_limit_retries: int = Field(4, ge=0, description="retries of a model call on a rate limit, HTTP 429")
    model_max_parallel: int | None = Field(None, ge=1, description="model calls in flight per process; unset: no limit")
    model_timeout_s: float = Field(120.0, gt=0, description="seconds before a model call times out")
    # answering questions
    privacy: Privacy = Field("samples", description="what data values a model may see")
    result_bytes: ByteSize = Field(ByteSize(1_000_000), description="byte cap on rows returned to a "
                                   "model or an MCP host, at least 1000")
    query_memory_limit: MemorySize = _desc("1GB", "DuckDB memory limit of the agent's queries", "size")
    query_temp_limit: MemorySize = _desc("2GB", "DuckDB spill limit of the agent's queries", "size")
    query_threads: int = Field(2, ge=1, description="DuckDB threads of the agent's queries")
    query_pg_role: str = Field("dia_query_reader", description="PostgreSQL role the agent's queries run as")
    # interpreting and building
    memory_limit: MemorySize = _desc("2GB", "DuckDB memory limit of the interpreter and the load; both spill beyond it", "size")
    max_columns: int = Field(10_000, ge=1, description="files wider than this are refused")
    wide_chunk: int = Field(1_000, ge=1, description="row checks per statement on wide tables")
    wide_split: int = Field(1_000, ge=2, description="a keyed table with more columns is split into parts "
                            "<table>, <table>__part2, ... of at most this many columns, each with the key")
    csv_buffer: ByteSize = Field(ByteSize(32_000_000), description="DuckDB's CSV read buffer, at least; twice "
                                 "the longest record when that is more")
    csv_max_record: ByteSize = Field(ByteSize(512_000_000), description="a delimited file with a longer "
                                     "record is refused (record_too_long, naming the line)")
    writer_wait_s: float = Field(900.0, ge=0, description="seconds a Dagster step waits for another writer")
    executor: Executor = Field("in_process", description="Dagster executor of the jobs",
                               json_schema_extra={"expect": "executor"})
    dbt_project: Path | None = Field(None, description="dbt project (from `dia dbt export`, possibly edited) "
                                     "that builds the refined tables in Dagster through dagster-dbt; unset: DIA's own load")
    # the memory store
    memory_url: str | None = Field(None, description="PostgreSQL URL of the memory store; unset: embedded, in <workspace>/pgdata")
    pgdata_home: Path = Field(Path("/var/lib/dia/pgdata"), description="where the embedded PostgreSQL's data "
                              "is relocated when its folder's parents must stay private")
    # sensors and schedules
    sensor_interval_s: int = Field(30, ge=1, description="seconds between sensor evaluations")
    settle_s: float = Field(5.0, ge=0, description="seconds a changed file must stay unchanged before it is read")
    build_tries: int = Field(3, ge=1, description="runs the data sensor requests for one change")
    quality_window: int = Field(10, ge=1, description="recent answers the quality sensor scores")
    quality_baseline: int = Field(30, ge=1, description="earlier answers the quality sensor compares with")
    quality_margin: float = Field(0.15, ge=0, description="drop in the answer score that alerts")
    nightly_cron: Cron = _desc("0 2 * * *", "cron of the nightly re-check", "cron")
    memory_cron: Cron = _desc("0 3 * * 0", "cron of the weekly memory maintenance", "cron")
    drift_null_jump: float = Field(0.10, ge=0, le=1, description="null-rate increase that counts as drift")
    drift_psi: float = Field(0.20, ge=0, description="population stability index that counts as drift")
    drift_fk_drop: float = Field(0.02, ge=0, le=1, description="drop in foreign-key coverage that counts as drift")
    drift_psi_min_rows: int = Field(50, ge=0, description="rows needed before PSI is computed")
    drift_small_change: float = Field(0.25, ge=0, description="relative change below which drift is small")
    drift_chi2_p: float = Field(0.01, gt=0, lt=1, description="chi-square p-value that counts as drift")
    # the command line and the UI
    debug: bool = Field(False, description="raise errors with their traceback instead of one line")
    ui_grace_s: float = Field(10.0, ge=0, description="seconds `dia ui` waits on Ctrl-C before stopping harder")

    @property
    def fallbacks(self) -> tuple[str, ...]:
        return tuple(m.strip() for m in (self.model_fallbacks or "").split(",") if m.strip())


def env_name(field: str) -> str:
    return PREFIX + field.upper()


FIELDS: dict[str, str] = {env_name(f): f for f in Settings.model_fields}


def _plain(annotation: Any) -> list[Any]:
    """The non-None members of an annotation (`int | None` -> [int])."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if a is not type(None)]
    return [annotation]


def expectation(field: str) -> str:
    """What the variable accepts, in words: `an integer >= 1`, `one of a, b`."""
    info = Settings.model_fields[field]
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if extra.get("expect") == "size":
        return "a memory size such as 2GB, 512MB or 80%"
    if extra.get("expect") == "executor":
        return ("one of in_process, multiprocess, or module:attribute of a Dagster executor such as "
                "dagster_k8s:k8s_job_executor")
    if extra.get("expect") == "location":
        return "a path or an s3://bucket/prefix URL"
    if extra.get("expect") == "cron":
        return "a cron expression of 5 fields such as '0 2 * * *'"
    bounds = []
    for meta in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if isinstance(meta, getattr(annotated_types, attr.capitalize())):
                bounds.append(f"{sign} {getattr(meta, attr)}")
    kind = _plain(info.annotation)[0]
    if get_origin(kind) is Annotated:
        kind = get_args(kind)[0]
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(map(str, get_args(kind)))
    words = {int: "an integer", float: "a number", bool: "a boolean (1/0, true/false, yes/no)",
             ByteSize: "a number of bytes or a size such as 1MB", Path: "a path", str: "text"}
    return " ".join([words.get(kind, "a valid value"), " and ".join(bounds)]).strip()


def _one_line(err: ValidationError) -> str:
    """`DIA_X=value: expected ... (description)` for each bad variable, joined by `; `."""
    lines = []
    for e in err.errors():
        field = str(e["loc"][0]) if e["loc"] else ""
        if field not in Settings.model_fields:
            lines.append(" ".join(str(e["msg"]).split()))
            continue
        desc = Settings.model_fields[field].description
        lines.append(f"{env_name(field)}={e.get('input')}: expected {expectation(field)} ({desc})")
    return "; ".join(dict.fromkeys(lines))


class _FromMapping(Settings):
    """The same fields read from a given mapping (init keywords) rather than os.environ."""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,  # noqa: ARG003
                                   **others: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Validate the settings of `env` (default: the process environment); SettingsError names
    each bad variable. Without `env`, pydantic-settings reads os.environ itself."""
    try:
        if env is None:
            settings = Settings()
        else:
            given = {FIELDS[k.upper()]: v for k, v in env.items()
                     if k.upper() in FIELDS and str(v).strip()}
            settings = _FromMapping(**given)
    except ValidationError as err:
        raise SettingsError(_one_line(err)) from None
    return settings


def _dia_items() -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(PREFIX)))


_CACHE: tuple[tuple[tuple[str, str], ...], Settings] | None = None
_LOCK = threading.Lock()


def get_settings() -> Settings:
    """The settings of the current environment: validated once, re-read only when a `DIA_*`
    variable changed (a tuple comparison, cheap enough for every call)."""
    global _CACHE
    key = _dia_items()
    cached = _CACHE
    if cached is not None and cached[0] == key:
        return cached[1]
    settings = load_settings()
    with _LOCK:
        _CACHE = (key, settings)
    return settings


def reset_settings() -> None:
    """Forget the cached settings (tests)."""
    global _CACHE
    with _LOCK:
        _CACHE = None


def _hide_password(value: Any) -> Any:
    """A URL's or conninfo's password shown as *** (`dia config` output gets pasted around)."""
    if not isinstance(value, str):
        return value
    value = re.sub(r"(://[^:/@\s]+:)\S+@", r"\1***@", value)
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", value, flags=re.I)


def sources(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Each setting with its variable, effective value, source (`environment` or `default`)
    and description: what `dia config` prints."""
    env = os.environ if env is None else env
    settings = get_settings() if env is os.environ else load_settings(env)
    given = {k.upper() for k, v in env.items() if str(v).strip()}
    rows = []
    for field, info in Settings.model_fields.items():
        value = getattr(settings, field)
        if isinstance(value, Path):
            value = str(value)
        rows.append({"variable": env_name(field), "value": _hide_password(value),
                     "source": "environment" if env_name(field) in given else "default",
                     "description": info.description})
    return rows


def settings_table() -> str:
    """The Markdown table of every setting (docs/cli.md holds a copy a test keeps equal)."""
    lines = ["| Variable | Default | Accepts | Meaning |", "|---|---|---|---|"]
    for field, info in Settings.model_fields.items():
        default = "unset" if info.default is None else f"`{info.default}`"
        meaning = (info.description or "").replace("<", "&lt;").replace(">", "&gt;")
        lines.append(f"| `{env_name(field)}` | {default} | {expectation(field)} | {meaning} |")
    return "\n".join(lines) + "\n"
