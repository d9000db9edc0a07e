"""Errors of the analysis pipeline (its steps and records are contracts: contracts/analysis_steps.py)."""

from __future__ import annotations


class PipelineError(ValueError):
    """A step the session cannot run (bad name, unknown table, refused SQL...)."""
