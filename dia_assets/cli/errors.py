"""The root `dia` group: deprecated flags rewritten, and every error one line on stderr.

Known failures name their fix; anything else prints one line and the hint to rerun with
DIA_DEBUG=1, which re-raises so the traceback shows. A bad DIA_* value is a usage error (exit 2):
the line names the variable and what it accepts. Exit codes: docs/cli.md."""

from __future__ import annotations

import os
from typing import Any

import typer
from typer.core import TyperGroup

from dia_assets.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, one_line
from dia_assets.cli.compat import rewrite
from dia_assets.platform.settings import SettingsError, get_settings


def _known(exc: BaseException) -> str | None:
    """`<what>; <fix>` for failures a person can act on, else None. Imports are lazy (fast --help)."""
    from dia_assets.agents.schema_creator.writer_lock import WorkspaceBusy
    from dia_assets.platform.files.object_store import ObjectStoreError
    from dia_assets.platform.memory.connection import MemoryStoreUnavailable

    if isinstance(exc, ObjectStoreError):
        return str(exc)  # names the URL and what to check
    if isinstance(exc, MemoryStoreUnavailable):
        return (f"{exc}; check DIA_MEMORY_URL (unset it to use the embedded PostgreSQL in "
                "<workspace>/pgdata)")
    if isinstance(exc, WorkspaceBusy):
        return f"{exc}; wait for it to finish (or pass --wait SECONDS to `dia build`)"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}; check the owner and mode of that path"
    if isinstance(exc, FileNotFoundError):
        return f"not found: {exc.filename or exc}; check the path (or run the step that writes it)"
    if isinstance(exc, OSError) and exc.errno == 28:
        return f"no space left on the device ({exc.filename or exc}); free some space and rerun"
    return None


def _debug() -> bool:
    """DIA_DEBUG=1: re-raise. A bad DIA_* value elsewhere must not hide the error being reported."""
    try:
        return get_settings().debug
    except SettingsError:
        return False


def error_line(exc: BaseException) -> str:
    """The one line printed for an exception that reached the top."""
    known = _known(exc)
    if known is not None:
        return one_line(f"error: {known}")
    return one_line(f"error: internal error: {type(exc).__name__}: {exc} "
                    "(rerun with DIA_DEBUG=1 for the traceback, and report it)")


class DiaGroup(TyperGroup):
    """Typer's group with the deprecation rewrite before parsing and the error line after."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        args, warnings = rewrite(list(args))
        for w in warnings:
            typer.echo(f"warning: {w}", err=True)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: typer.Context) -> Any:
        saved = os.environ.get("DIA_WORKSPACE")
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # typer's and click's own: an exit code chosen on purpose, or a usage error (2)
        except KeyboardInterrupt:
            typer.echo("error: interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except SettingsError as exc:
            typer.echo(one_line(f"error: {exc}"), err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except Exception as exc:
            if _debug():
                raise
            typer.echo(error_line(exc), err=True)
            raise typer.Exit(EXIT_FAILED) from None
        finally:  # `-w` sets DIA_WORKSPACE for the command only
            if saved is None:
                os.environ.pop("DIA_WORKSPACE", None)
            else:
                os.environ["DIA_WORKSPACE"] = saved
