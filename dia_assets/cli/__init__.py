"""The `dia` command line (`dia = "dia_assets.cli:app"`): one module per command group."""

from dia_assets.cli.app import app

__all__ = ["app"]
