"""Bearer-token authentication for `dia mcp --http`.

Binding to loopback keeps other machines out, not other users of this one: any local
process could call `run_sql`. So the HTTP transport requires `Authorization: Bearer <token>`
on every request. The token is generated with `secrets` on the first start, written to
`<workspace>/mcp_token` with mode 0600 (created that way, never widened), and printed once;
later starts read it. A token file that others can read, or that is not a regular file, is
refused rather than trusted. `--no-auth` turns the check off, explicitly.

The check is a small ASGI middleware around the SDK's Starlette app (the SDK's own auth is
OAuth-shaped: an issuer and resource metadata for a static token would only mislead
clients). Requests without the token, or with a wrong one, get 401 before reaching MCP;
the comparison is constant-time.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from dia_assets.platform.workspace import Workspace

TOKEN_FILE = Workspace(Path()).mcp_token.name
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def token_path(workspace: Path) -> Path:
    return Workspace(workspace).mcp_token


def _read(path: Path) -> str:
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path} is not a regular file; remove it so a new MCP token is generated")
    if info.st_mode & 0o077:
        raise ValueError(f"{path} can be read by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                         "remove it so a new MCP token is generated (or chmod 600 it if it never left this account)")
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 32:
        raise ValueError(f"{path} holds no usable token (under 32 characters); remove it so a new one is generated")
    return token


def load_or_create_token(workspace: Path) -> tuple[str, bool]:
    """The HTTP bearer token of this workspace and whether it was created now."""
    path = token_path(workspace)
    if path.exists() or path.is_symlink():
        return _read(path), False
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # another server created it a moment ago
        return _read(path), False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token, True


class BearerToken:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>`; lifespan events
    pass through (the MCP session manager starts there)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode("utf-8")

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers") or []:
            if name.lower() == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), self._token)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "unauthorized", "error_description": (
            "dia mcp --http needs 'Authorization: Bearer <token>'; the token is in "
            f"<workspace>/{TOKEN_FILE}")}).encode("utf-8")
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="dia"')]})
        await send({"type": "http.response.body", "body": body})
