"""Interpret a folder and write the artifacts both the CLI and the asset publish."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from dia_assets.agents.interpreter.enrich import Complete, enrich
from dia_assets.agents.interpreter.interpreter import Progress, interpret
from dia_assets.agents.interpreter.render import to_markdown
from dia_assets.contracts.interpretation import Interpretation

log = logging.getLogger("dia.interpreter")


def interpret_to_files(
    data_dir: str | Path,
    json_out: str | Path,
    md_out: str | Path | None = None,
    complete: Complete | None = None,
    model: str | None = None,
    progress: Progress | None = None,
    previous: Interpretation | None = None,
    decisions: Mapping[str, str] | None = None,
) -> Interpretation:
    """`previous`: the last interpretation; its unchanged files keep their profiles. `decisions`: the
    expert's decisions on files that may be one table (`overrides.file_decisions`)."""
    interp = interpret(data_dir, progress=progress, previous=previous, decisions=decisions)
    if complete is not None and model:
        try:
            changes = enrich(interp, complete, model)
            (progress or log.info)(f"LLM pass by {model}: {len(changes)} change(s)")
        except Exception as exc:  # the LLM is an extra; its failure must not lose the profile
            (progress or log.warning)(f"LLM pass skipped: {type(exc).__name__}: {exc}")
    else:
        (progress or log.info)("LLM enrichment skipped: DIA_MODEL is not set")
    for path, text in ((json_out, interp.to_json()), (md_out, to_markdown(interp) if md_out else None)):
        if path and text is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
    return interp
