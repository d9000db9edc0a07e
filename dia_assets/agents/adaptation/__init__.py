"""Proactive adaptation (Data Agents §2): notice change, decide the reaction. No Dagster here."""
