"""The scripted model behind the documented shell commands (tests/test_docs_commands.py).

The commands run as real `dia` processes, so the scripted model cannot be registered by the
test itself: `sitecustomize.py` in a hooks folder on PYTHONPATH calls `install_on_import()`,
which registers it with litellm (provider `fake`) right after litellm is imported, so commands
that never call a model do not pay for the import.

`DIA_DOCS_ANSWERS` names a JSON file {question: {"contract": {...}, "sql": "..."}}: asked a
question it knows, the model declares that contract, then submits that SQL. A call offering
no tools (`dia doctor`'s cheap call, a reflection) is answered with plain text.
"""

from __future__ import annotations

import importlib.abc
import json
import os
import sys
from pathlib import Path
from typing import Any

ANSWERS_ENV = "DIA_DOCS_ANSWERS"


def answers() -> dict[str, dict[str, Any]]:
    return json.loads(Path(os.environ[ANSWERS_ENV]).read_text(encoding="utf-8"))


def _question(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The scripted answer whose question appears in the conversation."""
    text = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    for question, answer in answers().items():
        if question in text:
            return answer
    return None


def step(messages: list[dict[str, Any]]) -> Any:
    """One reply: declare the contract, then submit; plain text when there is no question."""
    from tests.query_fixtures import call

    answer = _question(messages)
    if answer is None:
        return "ok"
    declared = any(
        "declare_contract" in json.dumps(m.get("tool_calls") or [], default=str)
        for m in messages if m.get("role") == "assistant"
    )
    if not declared:
        return call("declare_contract", **answer["contract"])
    return call("submit", sql=answer["sql"])


def register() -> None:
    """Register the scripted model as litellm provider `fake` (model `fake/scripted`)."""
    from tests.query_fixtures import register_tools

    register_tools([step] * 64)


class _AfterLitellm(importlib.abc.MetaPathFinder):
    """Runs `register()` once litellm itself has finished importing."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "litellm":
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            register()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install_on_import() -> None:
    if os.environ.get(ANSWERS_ENV):
        sys.meta_path.insert(0, _AfterLitellm())
