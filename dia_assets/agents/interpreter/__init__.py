"""Data Interpreter: profile raw sources into an interpretation by executing code."""

from dia_assets.agents.interpreter.interpreter import interpret

__all__ = ["interpret"]
