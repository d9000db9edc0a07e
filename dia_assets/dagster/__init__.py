"""Dagster glue: assets, checks, jobs and the instance helpers that translate the agents'
plain results into Dagster objects (dia_assets/definitions.py assembles the one Definitions)."""
