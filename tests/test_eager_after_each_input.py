"""The catalog's automation condition keeps a report stored after the catalog was asked for
(issue 26's live replay: a catalog run asked for at one 30 s tick and done within it swallowed
the report the next build stored seconds later, and the catalog kept a retired table). Each
sequence is evaluated with Dagster's own condition tester on a report -> catalog pair carrying
the condition `semantic_catalog` declares; Dagster's eager() is run beside it where it misses."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from dagster import (
    AssetKey,
    AutomationCondition,
    DagsterInstance,
    Definitions,
    asset,
    evaluate_automation_conditions,
)

from dia_assets.dagster.eager import eager_after_each_input


def catalog_condition() -> AutomationCondition:
    from dia_assets.definitions import defs

    spec = defs.resolve_assets_def("semantic_catalog").get_asset_spec(AssetKey("semantic_catalog"))
    return spec.automation_condition


class Ticks:
    """A report -> catalog pair on an instance; `tick()` is one automation evaluation and
    returns how many catalog runs it asked for."""

    def __init__(self, condition: AutomationCondition):
        @asset
        def report() -> None: ...

        @asset(deps=[report], automation_condition=condition)
        def catalog() -> None: ...

        self.assets, self.instance, self.cursor = [report, catalog], DagsterInstance.ephemeral(), None
        self.job = Definitions(assets=self.assets).resolve_implicit_global_asset_job_def()
        self.made("report", "catalog")
        assert self.tick() == 0

    def made(self, *keys: str) -> None:
        """One run that materializes `keys` (as a build run, a catalog run, or Materialize all)."""
        self.job.execute_in_process(instance=self.instance, asset_selection=[AssetKey(k) for k in keys])

    def tick(self) -> int:
        result = evaluate_automation_conditions(self.assets, self.instance, cursor=self.cursor)
        self.cursor = result.cursor
        return result.get_num_requested(AssetKey("catalog"))


def report_while_the_catalog_ran(ticks: Ticks) -> list[int]:
    """The replay's sequence: a report; the catalog asked for; within the same tick interval the
    catalog run ends and the next build stores its report."""
    ticks.made("report")
    asked = ticks.tick()
    ticks.made("catalog")
    ticks.made("report")
    return [asked, ticks.tick(), ticks.tick()]


def test_semantic_catalog_declares_the_condition():
    assert catalog_condition().get_label() == eager_after_each_input().get_label()
    assert catalog_condition() != AutomationCondition.eager()


def test_a_report_stored_while_the_catalog_ran_is_refreshed_after_it():
    assert report_while_the_catalog_ran(Ticks(catalog_condition())) == [1, 1, 0]


def test_dagsters_eager_loses_that_report():
    """Why the project does not use eager() for the catalog: the report is never taken in."""
    assert report_while_the_catalog_ran(Ticks(AutomationCondition.eager())) == [1, 0, 0]


def test_a_report_stored_while_a_catalog_run_is_in_flight_is_refreshed_after_it():
    ticks = Ticks(catalog_condition())
    ticks.made("report")
    assert ticks.tick() == 1
    assert ticks.tick() == 0  # asked for once: nothing new since
    ticks.made("report")  # stored after the request, before the catalog run ended
    ticks.made("catalog")
    assert [ticks.tick(), ticks.tick()] == [1, 0]


@pytest.mark.parametrize("sequence", [
    lambda t: t.made("report", "catalog"),  # Materialize all: the catalog came with its report
    lambda t: t.made("catalog"),  # a catalog refresh with no new report
])
def test_nothing_new_asks_for_nothing(sequence: Callable[[Ticks], None]):
    ticks = Ticks(catalog_condition())
    sequence(ticks)
    assert [ticks.tick(), ticks.tick()] == [0, 0]


def test_each_new_report_asks_once():
    ticks = Ticks(catalog_condition())
    for _ in range(3):
        ticks.made("report")
        assert [ticks.tick(), ticks.tick()] == [1, 0]
        ticks.made("catalog")
