"""Deprecated spellings of `dia` flags, rewritten to the consistent ones with a warning.

Kept so scripts written against the old flags (notably the shared key scorer's
`dia interpret {raw} --json {out}`) keep working while they move to the new spelling."""

from __future__ import annotations

from pathlib import Path

# Options of `dia interpret` that take a value, so their values are not taken for DATA_DIR.
_INTERPRET_VALUED = {"--md", "--output", "-o", "--workspace", "-w"}


def _command_index(args: list[str]) -> int | None:
    """Position of the subcommand: the first token that is not a root option."""
    return next((i for i, a in enumerate(args) if not a.startswith("-")), None)


def _positionals(tokens: list[str], valued: set[str]) -> list[str]:
    found, skip = [], False
    for tok in tokens:
        if skip:
            skip = False
        elif tok in valued:
            skip = True
        elif not tok.startswith("-"):
            found.append(tok)
    return found


def _interpret(rest: list[str], warn: list[str]) -> list[str]:
    """`--json FILE` (old: write the file) -> `--output FILE`; a bare `--json` prints JSON."""
    out = list(rest)
    for i, tok in enumerate(out):
        if tok.startswith("--json="):
            out[i:i + 1] = ["--output", tok.split("=", 1)[1]]
        elif tok == "--json" and i + 1 < len(out) and not out[i + 1].startswith("-"):
            others = out[:i] + out[i + 2:]
            if not _positionals(others, _INTERPRET_VALUED):
                continue  # `dia interpret --json DIR`: the flag, DIR is the data folder
            out[i] = "--output"
        else:
            continue
        warn.append("`dia interpret --json FILE` is deprecated: use `-o/--output FILE` "
                    "(`--json` now prints the interpretation on stdout)")
        break
    return out


def _rename_short(rest: list[str], short: str, new: str, applies) -> tuple[list[str], bool]:  # noqa: ANN001
    """The first `SHORT VALUE` whose value fits the old meaning becomes `NEW VALUE`."""
    out = list(rest)
    for i, tok in enumerate(out[:-1]):
        if tok == short and applies(out[i + 1]):
            out[i] = new
            return out, True
    return out, False


def rewrite(args: list[str]) -> tuple[list[str], list[str]]:
    """(args with deprecated spellings replaced, one warning per replacement)."""
    at = _command_index(args)
    if at is None:
        return args, []
    head, command, rest = args[:at], args[at], args[at + 1:]
    warn: list[str] = []
    if command == "interpret":
        rest = _interpret(rest, warn)
    elif command == "ask":  # `-w` was the warehouse; a workspace is an existing folder
        rest, hit = _rename_short(rest, "-w", "--warehouse", lambda v: not Path(v).is_dir())
        if hit:
            warn.append("`dia ask -w WAREHOUSE` is deprecated: use `--warehouse` (`-w` is the workspace)")
    elif command == "eval":  # `-w` was the number of workers
        rest, hit = _rename_short(rest, "-w", "--workers", str.isdigit)
        if hit:
            warn.append("`dia eval -w N` is deprecated: use `-j/--workers N` (`-w` is the workspace)")
    elif command == "lineage":  # `-q` was the saved answer's id
        rest, hit = _rename_short(rest, "-q", "--question", lambda v: not v.startswith("-"))
        if hit:
            warn.append("`dia lineage -q ID` is deprecated: use `--question ID` (`-q` means quiet)")
    return [*head, command, *rest], warn
