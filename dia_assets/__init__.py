"""DIA: the Dagster assets and the agents behind them.

The repository's top-level folders `resources/` and `sensors/` belong to this package: a wheel
installs them as `dia_assets.resources` and `dia_assets.sensors` (setup.py,
[tool.setuptools.package-dir]), so site-packages gets no generic top-level names. Run from a
source tree (PYTHONPATH=repo, an editable install) the folders sit beside the package instead;
the finder below serves them under the same names, so the code imports one name everywhere."""

from __future__ import annotations

import importlib.util
import sys
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

_MOUNTED = ("resources", "sensors")


class _SourceTreeFolders(MetaPathFinder):
    """Finds `dia_assets.<name>` in the top-level folder `<name>/` of a source tree."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = folders

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        folder = self.folders.get(fullname)
        if folder is None:
            return None  # submodules are found through the package's __path__ (the folder)
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def _mount_source_folders() -> None:
    """In a wheel the folders are inside the package and nothing is mounted."""
    here = Path(__file__).resolve().parent
    folders = {
        f"{__name__}.{name}": here.parent / name
        for name in _MOUNTED
        if not (here / name).is_dir() and (here.parent / name / "__init__.py").is_file()
    }
    if folders:
        # first: an editable install of another checkout must not serve its own copy
        sys.meta_path.insert(0, _SourceTreeFolders(folders))


_mount_source_folders()
