"""One-line model errors: which model, where it was sent, and the innermost cause, so a person
can act on them without reading litellm's wrapper text."""

from __future__ import annotations

import os

NO_MODEL_MESSAGE = (
    "No model is configured, so the Query Generator cannot answer questions. Set DIA_MODEL to "
    "a litellm model name and the provider's API key, for example "
    "`export DIA_MODEL=anthropic/claude-sonnet-4-5 ANTHROPIC_API_KEY=...` or "
    "`export DIA_MODEL=ollama/qwen2.5-coder` for a local model, then check it with `dia doctor`. "
    "The rest of the pipeline runs without one."
)

# exception classes (anywhere in the chain) that mean the model's endpoint was not reached or
# did not answer in time: httpx/httpcore transport errors, the OS's own, the SDKs' timeouts
_NETWORK = ("TransportError", "ConnectError", "ConnectTimeout", "TimeoutException", "ConnectionError",
            "TimeoutError", "gaierror", "APITimeoutError", "RemoteProtocolError")


class ModelUnavailable(RuntimeError):
    """The model could not be reached (refused, unreachable, timed out) or kept failing after
    the Router's retries and fallbacks: one line naming the model and the cause."""

    def __init__(self, model: str, cause: str, where: str | None = None) -> None:
        self.model, self.cause, self.where = model, cause, where
        at = f" at {where}" if where else ""
        super().__init__(f"model {model!r}{at} {cause}")


def chain(err: BaseException) -> list[BaseException]:
    """`err` and its causes, outermost first."""
    out: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and cur not in out and len(out) < 12:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def is_network_error(err: BaseException) -> bool:
    """True when the request never got an answer: litellm wraps these as APIConnectionError
    or even InternalServerError (status 500), so the chain of causes decides."""
    return any({c.__name__ for c in type(e).__mro__} & set(_NETWORK) for e in chain(err))


def one_line(text: str, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def provider_base(model: str) -> str | None:
    """The provider's <PROVIDER>_API_BASE / _BASE_URL setting, where litellm sends `model`."""
    if "/" not in model:
        return None
    provider = model.split("/", 1)[0].upper()
    return os.environ.get(f"{provider}_API_BASE") or os.environ.get(f"{provider}_BASE_URL")


def unavailable(err: BaseException, model: str, api_base: str | None = None) -> ModelUnavailable:
    """The one-line error for a failed call: the innermost cause (the OS's "Connection
    refused", a timeout) rather than litellm's wrapper text, and where it was sent when we
    know (the call's api_base or the provider's base URL setting; litellm's own debug text
    names the provider default even when these override it)."""
    root = chain(err)[-1]
    detail = one_line(str(root) or type(root).__name__)
    errno = getattr(root, "errno", None)
    if isinstance(root, OSError) and isinstance(errno, int) and os.strerror(errno) not in detail:
        detail = f"[Errno {errno}] {os.strerror(errno)}"  # asyncio's text is "Connect call failed (host, port)"
    where = api_base or provider_base(model)
    if is_network_error(err):
        return ModelUnavailable(model, f"is unreachable: {detail}", where)
    return ModelUnavailable(model, f"kept failing ({type(err).__name__}): {detail}", where)
