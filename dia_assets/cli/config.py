"""`dia config`: every DIA_* setting, its effective value and where it came from. Mounted in
dia_assets/cli/app.py; the settings themselves are dia_assets/platform/settings.py."""

from __future__ import annotations

import typer

from dia_assets.cli.common import JsonOpt, echo_json


def config(as_json: JsonOpt = False) -> None:
    """Print each DIA_* setting: its effective value, its source (environment or default) and
    what it does. A bad value exits 2 naming the variable and what it accepts."""
    from dia_assets.platform.settings import sources

    rows = sources()
    if as_json:
        echo_json({"settings": rows})
        return
    shown = [(r["variable"], "(unset)" if r["value"] is None else str(r["value"]), r["source"], r["description"])
             for r in rows]
    width = [max(len(row[i]) for row in shown) for i in range(3)]
    for row in shown:
        typer.echo("  ".join(cell.ljust(width[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
