"""Declarative automation that is on in a fresh instance.

Dagster creates `default_automation_condition_sensor` for assets with an automation condition,
but STOPPED: in a fresh instance `validation_report`'s eager condition would never be evaluated.
Declaring the sensor here, RUNNING by default, makes the condition the project declares the
behaviour a new instance has; a person can still stop it on the Automation page."""

from dagster import AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus

AUTOMATION_SENSOR = "dia_automation"

automation_sensor = AutomationConditionSensorDefinition(
    AUTOMATION_SENSOR,
    # every asset and check of the code location: the ones without a condition are ignored,
    # and a condition added later is evaluated without a second sensor
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions (validation_report: eager, so a new "
    "warehouse table materialization is followed by a fresh validation report; semantic_catalog: eager, so "
    "a new validation report is followed by a catalog refresh in its own run, even one stored while "
    "the previous refresh ran). On by default.",
)
