"""Object storage (`s3://bucket/prefix`) as a local folder: a mirror synced by ETag.

Every reader in DIA (the interpreter's sniffing, DuckDB's `read_csv`, the Excel and JSON readers,
the loader's final-record check) reads local files by path, seeks, and reads some twice. So a
folder on S3 is not read in place: it is mirrored into a local folder first (`pull`), which
downloads only the objects whose ETag changed since the last pull and deletes the local files
whose object is gone, and a folder written locally is sent back the same way (`push`: only the
files whose size or modification time moved since the last sync, deletions included). The
state of a mirror (key -> size, ETag, local mtime) is a JSON file inside it.

Reading through DuckDB's registered fsspec filesystem was the alternative: it streams the CSV
and Parquet reads, but the interpreter's own readers (sniffing, encodings, Excel) would each
need a remote variant, and every pass over a file would be a download. The mirror pays one
download per changed object and keeps one code path for every reader.

Credentials and endpoint come from the standard variables (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL or
AWS_ENDPOINT_URL_S3 for an S3-compatible store), as boto does. s3fs is the `s3` extra.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

SCHEMES = ("s3://",)
STATE = ".dia-mirror.json"  # the mirror's own record, never uploaded
LOCK = ".dia-mirror.lock"


class ObjectStoreError(RuntimeError):
    """An object store cannot be read or written; the message names the URL and a fix."""


class StoredObject(NamedTuple):
    """One object under a prefix: its key relative to the prefix, size and ETag."""

    rel: str
    size: int
    etag: str


def is_url(location: str | os.PathLike[str] | None) -> bool:
    """Whether `location` names an object-store prefix rather than a local path."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def split(url: str) -> str:
    """`s3://bucket/prefix/` -> `bucket/prefix` (what s3fs calls a path)."""
    return url.split("://", 1)[1].strip("/")


def _endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


_session: Any = None


def _session_keeping_dates_as_text() -> Any:
    """An aiobotocore session whose responses keep timestamps as text. DIA reads sizes and
    ETags, never LastModified, and parsing one date per listed object was most of a listing's
    CPU time (150 µs an object, 55 µs without: bench/sensor.py)."""
    global _session
    if _session is None:
        from aiobotocore.session import AioSession

        session = AioSession()
        session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=str)
        _session = session
    return _session


def filesystem() -> Any:
    """An s3fs filesystem for the current environment, without listing caches (a sensor must
    see a new object on its next tick, not after a cache expires)."""
    try:
        import s3fs
    except ImportError:
        raise ObjectStoreError("s3:// locations need s3fs: pip install 'dia-assets[s3]'") from None
    client: dict[str, Any] = {}
    if _endpoint():
        client["endpoint_url"] = _endpoint()
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        client["region_name"] = region
    # one instance per endpoint and credentials (s3fs caches instances by their arguments)
    return s3fs.S3FileSystem(use_listings_cache=False, client_kwargs=client, session=_session_keeping_dates_as_text(),
                             key=os.environ.get("AWS_ACCESS_KEY_ID"), secret=os.environ.get("AWS_SECRET_ACCESS_KEY"),
                             token=os.environ.get("AWS_SESSION_TOKEN"))


def explain(url: str, err: BaseException) -> ObjectStoreError:
    """One line naming the URL, what went wrong and what to check (no traceback)."""
    text = f"{type(err).__name__}: {err}".lower()
    if "nosuchbucket" in text or "bucket does not exist" in text or "specified bucket" in text:
        why = "the bucket does not exist; create it or fix the URL"
    elif isinstance(err, PermissionError) or any(w in text for w in ("accessdenied", "invalidaccesskeyid",
                                                                     "signaturedoesnotmatch", "forbidden",
                                                                     "credentials")):
        why = "access denied; check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the bucket's policy)"
    elif "connect" in text or "endpoint" in text:
        why = f"cannot reach the endpoint {_endpoint() or 'of AWS'}; check AWS_ENDPOINT_URL and the network"
    elif isinstance(err, FileNotFoundError):
        why = "no such object or bucket; fix the URL"
    else:
        why = " ".join(f"{type(err).__name__}: {err}".split())[:300]
    return ObjectStoreError(f"{url}: {why}")


def listing(url: str, fs: Any = None) -> list[StoredObject]:
    """Every object under the prefix `url`, sorted by key; a missing bucket or a refused
    request raises ObjectStoreError naming `url` (an existing bucket with no such prefix is an
    empty folder)."""
    fs = fs or filesystem()
    base = split(url)
    bucket = base.split("/", 1)[0]
    try:
        fs.ls(bucket, refresh=True)  # raises for a missing bucket or refused keys (exists() says False to both)
        found = fs.find(base, detail=True)
    except ObjectStoreError:
        raise
    except Exception as err:  # noqa: BLE001 - botocore, aiohttp and fsspec errors all end here, one line
        raise explain(url, err) from None
    out = []
    for path, info in found.items():
        rel = path[len(base):].lstrip("/")
        if rel and info.get("type", "file") == "file":
            out.append(StoredObject(rel, int(info.get("size") or 0), str(info.get("ETag", "")).strip('"')))
    return sorted(out)


def object_hash(url: str, fs: Any = None, size: int | None = None, chunk: int = 1 << 20) -> str:
    """sha256 of an object's bytes, streamed: the same digest `discover.content_hash` gives its
    copy. A `size` known from the listing saves the HEAD request before the GET."""
    fs = fs or filesystem()
    digest = hashlib.sha256()
    try:
        with fs.open(split(url), "rb", block_size=chunk, size=size) as fh:
            while block := fh.read(chunk):
                digest.update(block)
    except FileNotFoundError:
        raise  # gone since it was listed: the caller skips it
    except Exception as err:  # noqa: BLE001
        raise explain(url, err) from None
    return digest.hexdigest()


def cache_root() -> Path:
    """DIA_OBJECT_CACHE, else a folder of this user's in the temporary directory."""
    from dia_assets.platform.settings import get_settings

    root = get_settings().object_cache or Path(tempfile.gettempdir()) / f"dia-objects-{os.getuid()}"
    root.mkdir(parents=True, exist_ok=True)
    return root


def mirror_folder(url: str, kind: str = "raw") -> Path:
    """The local folder that mirrors `url` on this machine: the same for every process, so a
    second pull downloads only what changed."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return cache_root() / f"{kind}-{digest}"


def _excluded(rel: str, exclude: tuple[str, ...]) -> bool:
    return rel in (STATE, LOCK) or any(rel == e.rstrip("/") or rel.startswith(e.rstrip("/") + "/") for e in exclude)


def _read_state(dest: Path) -> dict[str, list]:
    try:
        return json.loads((dest / STATE).read_text())
    except (OSError, ValueError):
        return {}


def _write_state(dest: Path, state: dict[str, list]) -> None:
    tmp = dest / f"{STATE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(state, sort_keys=True))
    os.replace(tmp, dest / STATE)


@contextmanager
def _locked(dest: Path) -> Iterator[None]:
    """One sync of a mirror at a time on this machine (steps of a run may start together)."""
    dest.mkdir(parents=True, exist_ok=True)
    with (dest / LOCK).open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def pull(url: str, dest: Path, exclude: tuple[str, ...] = (), fs: Any = None,
         only: tuple[str, ...] | None = None) -> list[str]:
    """Make `dest` hold the objects under `url`: download each object whose ETag differs from
    the last pull's (or whose local copy was changed), delete the local files whose object is
    gone. Returns the keys downloaded. Paths in `exclude` (relative, folders end with /) are
    neither downloaded nor deleted; with `only`, nothing but those paths is."""
    fs = fs or filesystem()
    objects = [o for o in listing(url, fs) if not _excluded(o.rel, exclude)
               and (only is None or _excluded(o.rel, only))]
    with _locked(dest):
        state = _read_state(dest)
        fetched = []
        for obj in objects:
            local = dest / obj.rel
            known = state.get(obj.rel)
            if known and known[1] == obj.etag and _stat(local) == (known[0], known[2]):
                continue
            local.parent.mkdir(parents=True, exist_ok=True)
            tmp = local.with_name(f".{local.name}.{os.getpid()}.part")
            try:
                fs.get_file(f"{split(url)}/{obj.rel}", str(tmp))
            except Exception as err:  # noqa: BLE001
                tmp.unlink(missing_ok=True)
                raise explain(f"{url.rstrip('/')}/{obj.rel}", err) from None
            os.replace(tmp, local)
            size, mtime = _stat(local) or (obj.size, 0)
            state[obj.rel] = [size, obj.etag, mtime]
            fetched.append(obj.rel)
        present = {o.rel for o in objects}
        # gone: objects this pull covers (not excluded, inside `only`) that the bucket no longer holds
        for rel in [r for r in state if r not in present and not _excluded(r, exclude)
                    and (only is None or _excluded(r, only))]:
            (dest / rel).unlink(missing_ok=True)
            del state[rel]
        _write_state(dest, state)
    return fetched


def _local_files(dest: Path, exclude: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for path in dest.rglob("*"):
        rel = path.relative_to(dest).as_posix()
        if path.is_file() and not path.name.endswith((".part", ".tmp")) and not _excluded(rel, exclude):
            out[rel] = path
    return out


def push(dest: Path, url: str, exclude: tuple[str, ...] = (), fs: Any = None) -> list[str]:
    """Send what changed in `dest` since the last sync to `url`: upload each file whose size or
    modification time moved (or that is new), delete the objects of files deleted locally. An
    object someone else changed meanwhile is overwritten only when the local file changed too
    (last writer wins per file). Returns the keys uploaded."""
    fs = fs or filesystem()
    base = split(url)
    with _locked(dest):
        state = _read_state(dest)
        files = _local_files(dest, exclude)
        sent = []
        try:
            for rel, path in sorted(files.items()):
                known, now = state.get(rel), _stat(path)
                if now is None or (known and (known[0], known[2]) == now):
                    continue
                fs.put_file(str(path), f"{base}/{rel}")
                etag = str(fs.info(f"{base}/{rel}").get("ETag", "")).strip('"')
                state[rel] = [now[0], etag, now[1]]
                sent.append(rel)
            for rel in [r for r in state if r not in files and not _excluded(r, exclude)]:
                fs.rm_file(f"{base}/{rel}")
                del state[rel]
        except Exception as err:  # noqa: BLE001
            raise explain(url, err) from None
        finally:
            _write_state(dest, state)
    return sent


def local_root(location: str | os.PathLike[str]) -> Path:
    """Where `location`'s files are read locally (an interpretation names this folder): the
    path itself, or the mirror folder of an s3:// prefix, without syncing it."""
    return mirror_folder(str(location).rstrip("/")) if is_url(location) else Path(location)


def local_copy(location: str | os.PathLike[str]) -> Path:
    """A local folder holding `location`'s files: the path itself, or the synced mirror of an
    s3:// prefix (see `pull`)."""
    if not is_url(location):
        return Path(location)
    dest = local_root(location)
    pull(str(location), dest)
    return dest
