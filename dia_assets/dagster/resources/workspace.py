"""Where agents read raw files and write artifacts (DESIGN §4).

Either may be an s3://bucket/prefix URL. This resource is the one place a step syncs them:
`setup_for_execution` pulls the workspace into this process's working copy and the raw files
into this machine's mirror, `teardown_after_execution` pushes what the step changed
(platform/remote_workspace.py). On the multiprocess executor every step is a process with a
working copy of its own, so steps share state only through the bucket."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field

from dia_assets.agents import locations
from dia_assets.platform import remote_workspace
from dia_assets.platform.files.object_store import is_url, local_copy, local_root
from dia_assets.platform.workspace import Workspace


def default_workspace() -> str:
    return str(locations.workspace_root())


def default_data_dir() -> str:
    return str(locations.data_dir())


class WorkspaceResource(ConfigurableResource):
    """The shared workspace W: artifact root plus the raw data folder it interprets."""

    root: str = Field(default_factory=default_workspace, description="Artifact root (DIA_WORKSPACE).")
    data_dir: str = Field(default_factory=default_data_dir, description="Raw files (DIA_DATA_DIR).")

    def setup_for_execution(self, context: InitResourceContext) -> None:  # noqa: ARG002 - Dagster's hook
        if is_url(self.root):
            remote_workspace.pull(self.root)
        if is_url(self.data_dir):
            local_copy(self.data_dir)

    def teardown_after_execution(self, context: InitResourceContext) -> None:  # noqa: ARG002 - Dagster's hook
        try:
            remote_workspace.push(self.root)  # nothing for a local workspace
        finally:
            remote_workspace.release(self.root)

    @property
    def root_path(self) -> Path:
        path = remote_workspace.working_copy(self.root).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def data_path(self) -> Path:
        return local_root(self.data_dir).resolve()

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
