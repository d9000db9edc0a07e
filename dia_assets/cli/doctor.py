"""`dia doctor`: is the configured model reachable? One cheap call each, one line each."""

from __future__ import annotations

from typing import Annotated

import typer


def doctor(
    model: Annotated[str | None, typer.Option("--model", "-m", help="Check this litellm model instead of the configured ones.")] = None,
) -> None:
    """Print the configured model(s), make one cheap call to each through the model door and
    explain any failure with its fix. Exit 0 when every model answered, 1 otherwise."""
    from dia_assets.platform.model.doctor import configured
    from dia_assets.platform.model.doctor import doctor as run_doctor
    from dia_assets.platform.model.errors import NO_MODEL_MESSAGE

    pairs = [("--model", model)] if model else configured()  # a bad setting: exit 2, naming it
    if not pairs:
        typer.echo(f"dia doctor: {NO_MODEL_MESSAGE}", err=True)
        raise typer.Exit(1)
    results = run_doctor(models=pairs)
    for result in results:
        typer.echo(result.line, err=not result.ok)
    raise typer.Exit(0 if all(r.ok for r in results) else 1)
