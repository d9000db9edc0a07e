"""Dagster's eager condition, with an input's update kept until the asset is asked for after it.

`AutomationCondition.eager()` forgets a dependency's update when, on the same automation tick,
the asset itself shows as requested or materialized: it cannot tell which came first. The
automation sensor ticks every 30 s, so a catalog run asked for at one tick and done within the
interval swallowed a validation report stored a few seconds after it; the catalog kept a table
the next build had retired, and no run followed (issue 26's live replay, about half of the runs
under load). Here the update is compared in time with the last request (both carry a
timestamp, which Dagster's `since` uses to keep the later), so an update after the request stays
pending until the asset is asked for again; a run already in progress is waited for.
"""

from __future__ import annotations

from dagster import AutomationCondition


def eager_after_each_input() -> AutomationCondition:
    # timed on both sides: the input's materialization, the tick that asked for this asset
    updated = AutomationCondition.any_deps_match(AutomationCondition.newly_updated()).with_label("any_deps_updated")
    pending = updated.since(AutomationCondition.newly_requested()).with_label("updated since requested")
    # an input asked for on this tick: this asset joins its run, as with eager
    joins = AutomationCondition.any_deps_match(AutomationCondition.will_be_requested()).with_label(
        "any_deps_requested")
    # an input made in the same run as this asset (Materialize all) is already taken in
    with_it = AutomationCondition.any_deps_match(AutomationCondition.executed_with_root_target()).with_label(
        "latest input made with this asset")
    return (AutomationCondition.in_latest_time_window()
            & (pending | joins | AutomationCondition.newly_missing().since_last_handled())
            & ~with_it
            & ~AutomationCondition.any_deps_missing()
            & ~AutomationCondition.any_deps_in_progress()
            & ~AutomationCondition.in_progress()).with_label("eager, after each new input")
