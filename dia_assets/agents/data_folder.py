"""What a data folder carries beside its raw files: its questions and its expert corrections.

A data folder is self-contained, so that one folder's questions and corrections are never
applied to another: `<data dir>/questions.yaml` lists the questions asked of it (the
`questions` partitions) and `<data dir>/overrides.yaml` seeds a new workspace's
`review/interpretation_overrides.yaml`. Both are YAML, which the interpreter never reads as
data. `DIA_QUESTIONS` names another questions file; a folder without these files has no
questions and starts from the overrides template.
"""

from __future__ import annotations

from pathlib import Path

from dia_assets.platform.files.object_store import is_url
from dia_assets.platform.settings import get_settings

QUESTIONS_FILE = "questions.yaml"
OVERRIDES_FILE = "overrides.yaml"
ADD_QUESTIONS_HINT = (f"add a {QUESTIONS_FILE} to the data folder (a YAML list of `id: ...` / `question: ...` "
                      "items) or name a file with DIA_QUESTIONS")


def questions_file(data_dir: str | Path | None = None) -> Path | None:
    """DIA_QUESTIONS when set, else `<data dir>/questions.yaml` when the folder has one, else
    None (no questions). `data_dir` defaults to DIA_DATA_DIR."""
    settings = get_settings()
    if settings.questions:
        return settings.questions
    candidate = Path(data_dir or settings.data_dir) / QUESTIONS_FILE
    return candidate if candidate.is_file() else None


def overrides_seed(data_dir: str | Path) -> Path | None:
    """`<data dir>/overrides.yaml` when the folder carries expert corrections, else None."""
    candidate = Path(data_dir) / OVERRIDES_FILE
    return candidate if candidate.is_file() else None


def folder_id(data_dir: str | Path, workspace: str | Path) -> str:
    """The identity sensors key their state by: the resolved data folder and workspace. State
    kept for one folder means nothing for another (a file of A is no deletion in B). An
    s3:// URL is its own identity."""
    def named(where: str | Path) -> str:
        return str(where).rstrip("/") if is_url(where) else str(Path(where).resolve())
    return f"{named(data_dir)} (workspace {named(workspace)})"
