"""Where the memory store lives: an external URL, or the embedded server in the workspace."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from dia_assets.platform.memory.server import EmbeddedServer
from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import Workspace


class MemoryStoreUnavailable(RuntimeError):
    """The store cannot be reached; the message names the target without its password."""


def redact(conninfo: str) -> str:
    """A readable target for messages: user, host, port and database, never the password."""
    try:
        parts = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "<unparseable connection string>"
    user = parts.get("user") or ""
    password = "***" if parts.get("password") else ""
    auth = f"{user}{':' + password if password else ''}@" if user or password else ""
    host = str(parts.get("host") or "")
    port = f":{parts['port']}" if parts.get("port") else ""
    if host.startswith("/"):
        return f"postgresql://{auth}/{parts.get('dbname') or ''}?host={host}"
    return f"postgresql://{auth}{host}{port}/{parts.get('dbname') or ''}"


def default_url() -> str | None:
    return get_settings().memory_url


def default_pgdata() -> Path:
    return Workspace(get_settings().workspace).pgdata


@dataclass
class ConnectionTarget:
    """Resolves to a conninfo: the external URL when given, else the embedded server's."""

    url: str | None = None
    pgdata: Path | None = None
    dbname: str | None = None
    connect_timeout: int = 5
    _embedded: EmbeddedServer | None = field(default=None, init=False, repr=False)

    @property
    def embedded(self) -> bool:
        return not self.url

    def conninfo(self) -> str:
        if self.url:
            return self.url
        if self._embedded is None:
            self._embedded = EmbeddedServer(self.pgdata or default_pgdata())
        uri = self._embedded.uri()
        if self.dbname:
            uri = uri.replace("/postgres?", f"/{self.dbname}?", 1)
        return uri

    def describe(self) -> str:
        if self.url:
            return redact(self.url)
        return f"embedded PostgreSQL in {(self.pgdata or default_pgdata()).resolve()}"

    def connect(self) -> psycopg.Connection:
        """Open a connection, or raise MemoryStoreUnavailable naming the (redacted) target."""
        conninfo = self.conninfo()
        try:
            return psycopg.connect(conninfo, connect_timeout=self.connect_timeout)
        except psycopg.OperationalError as err:
            reason = str(err).strip()
            password = conninfo_to_dict(conninfo).get("password")
            if password:
                reason = reason.replace(str(password), "***")
            raise MemoryStoreUnavailable(
                f"cannot reach the memory store at {self.describe()}: {reason}. "
                "Check DIA_MEMORY_URL (PostgreSQL with the `vector` extension), "
                "or unset it to use the embedded server."
            ) from err
