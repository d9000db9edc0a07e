"""`python -m dia_assets.cli ...`, the same as `dia ...`."""

from dia_assets.cli.app import app

app()
