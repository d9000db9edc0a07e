"""Measuring key inference on schemas nobody tuned on (issue: keys of warehouse-style schemas).

`generator` writes seeded random schemas (5-40 tables, many naming conventions, star and
snowflake, composite and role-named keys, coincidental containments) as CSV files with a
`truth.json` in the layout of `../shared/datasets`; `score` scores an interpretation against
such a truth, per pattern. Tests score a few seeds on every run; `bench/keys.py` scores 200.
"""

from dia_assets.agents.key_eval.generator import GeneratedSchema, generate, write_schema
from dia_assets.agents.key_eval.score import KeyScore, score_interpretation, summarize

__all__ = ["GeneratedSchema", "KeyScore", "generate", "score_interpretation", "summarize", "write_schema"]
