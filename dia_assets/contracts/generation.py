"""The pending install record (`state/pending_install.json`): a validated build's report and
plan, written before the build is renamed over the warehouse, so the next start can tell
whether the rename happened (finish: write them) or not (roll back: drop them)."""

from __future__ import annotations

from pydantic import Field

from dia_assets.contracts.artifact import Artifact
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport

PENDING_VERSION = 1


class PendingInstall(Artifact):
    version: int = PENDING_VERSION
    attempt_id: str
    warehouse: str
    warehouse_identity: str = Field(description="inode-size-mtime of the built file: a rename keeps them, so "
                                    "the file in place has this identity exactly when the rename happened.")
    report: ValidationReport
    manifest: Manifest
