"""What a question run used to pay before its first answer, paid once per code server instead.

Under `dia ui` (dia_assets/boot/sitecustomize.py) every run worker is forked from one
forkserver that imported Dagster and the agents (WARM there). With a model configured, a
question run (`query_result`, `analysis_result`: one run each per *Materialize all*) then
still spent most of its time before its first answer loading what the answering needs, each
run on its own, side by side (issue 31, bench/ui.py; one profiled question on the example at
load 20: 97 s before the answer, then 4-6 s per question): litellm's import (46 s there),
the pipeline agent's (scipy.stats, 11 s), tiktoken's encoding for the prompt budget (6 s), the
catalog's word lexicon (6 s), the chart renderer and pyarrow.parquet (8 s), the memory client.

The forkserver imports this module once (WARM_WITH_MODEL in the sitecustomize): each step
below runs then, in the background of the code server's start, and every run worker forked
afterwards starts with it done. Nothing here reads the workspace or the warehouse (a run still
sees the current manifest, questions and data), and nothing starts a thread or opens a
connection (a fork copies neither safely). Without a model nothing is loaded: builds and
unanswered questions do not need any of it. A step that fails is skipped (the run then loads
it itself, as before): the forkserver must start whatever happens here.
"""

from __future__ import annotations

from collections.abc import Callable


def _model_library() -> None:
    from dia_assets.platform.model.litellm import load, token_count

    load()
    token_count([{"role": "user", "content": "warm"}])  # loads the tokenizer the prompt budget counts with


def _answering() -> None:
    import pandas  # noqa: F401 - each answer's result.parquet (written through pandas)
    import psycopg  # noqa: F401 - the shared memory's driver (imported by its first connection)
    import pyarrow.parquet  # noqa: F401 - each answer's result.parquet

    import dia_assets.agents.analysis.auto  # noqa: F401 - query_result's agent (semantic operators, scipy)
    import dia_assets.agents.analysis.run  # noqa: F401 - analysis_result's
    import dia_assets.agents.charts.render  # noqa: F401 - each answer's chart
    import dia_assets.agents.query.memory  # noqa: F401 - the shared memory client (psycopg)


def _catalog_words() -> None:
    from dia_assets.agents.catalog.lexicon import abbreviations, lexicon
    from dia_assets.agents.query.linking import english_words

    lexicon()
    abbreviations()
    english_words()  # schema linking's English words, read off WordLlama's tokenizer (plain tuples)


STEPS: tuple[tuple[str, Callable[[], None]], ...] = (
    ("model library", _model_library), ("answering", _answering), ("catalog words", _catalog_words))


def warm() -> list[str]:
    """Run every step when a model is configured; the names of the steps that ran."""
    try:
        from dia_assets.platform.settings import get_settings

        if not get_settings().model:
            return []
    except Exception:  # noqa: BLE001 - settings that do not validate: the run says so, not the forkserver
        return []
    done = []
    for name, step in STEPS:
        try:
            step()
            done.append(name)
        except Exception:  # noqa: BLE001, S112 - see the module docstring
            continue
    return done


WARMED = warm()
