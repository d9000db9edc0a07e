"""Base for every JSON artifact in the workspace: versioned, written and read one way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Self

from pydantic import BaseModel


class Artifact(BaseModel):
    """Subclasses declare `version: int = N`; readers validate against the same model."""

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True)

    def write(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, self.to_json())
        return target

    @classmethod
    def read(cls, path: str | Path) -> Self:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


def write_atomic(path: Path, text: str) -> None:
    """Write beside, then rename: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
