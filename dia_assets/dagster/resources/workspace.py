"""Where agents read raw files and write artifacts (DESIGN §4)."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from dia_assets.agents import locations
from dia_assets.platform.workspace import Workspace


def default_workspace() -> str:
    return str(locations.workspace_root())


def default_data_dir() -> str:
    return str(locations.data_dir())


class WorkspaceResource(ConfigurableResource):
    """The shared workspace W: artifact root plus the raw data folder it interprets."""

    root: str = Field(default_factory=default_workspace, description="Artifact root (DIA_WORKSPACE).")
    data_dir: str = Field(default_factory=default_data_dir, description="Raw files (DIA_DATA_DIR).")

    @property
    def root_path(self) -> Path:
        path = Path(self.root).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).resolve()

    @property
    def tree(self) -> Workspace:
        """The workspace tree (platform/workspace.py); like `path`, a file's parent folder is
        created when its path is asked for, so a step can write it."""
        return Workspace(self.root_path, create=True)

    @property
    def files(self) -> Workspace:
        """The workspace tree without creating anything (for a step that only reads)."""
        return Workspace(self.root_path)

    def path(self, *parts: str) -> Path:
        """An artifact path inside the workspace; parent folders are created."""
        target = self.root_path.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target
