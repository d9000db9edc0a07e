"""Fidelity across engines, on Spark, for the datasets test_engine_fidelity_spark.py leaves to
this module (its TARGETS and `builds`): classicmodels and the two extracts, pagila and tpch,
with their full datasets when ../shared/datasets is here."""

from __future__ import annotations

import pytest

from tests import test_engine_fidelity as fidelity
from tests.test_engine_fidelity_spark import DATASETS as FIRST
from tests.test_engine_fidelity_spark import builds  # noqa: F401 - the fixture, module-scoped here too

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

DATASETS = [name for name in fidelity.NAMES if name not in FIRST]
globals().update(fidelity.dataset_tests(DATASETS))
