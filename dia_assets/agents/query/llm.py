"""Tool-calling model access through litellm. The loop depends only on `ChatFn`; tests pass
a scripted provider registered with litellm, so this exact code path runs offline."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NO_MODEL_MESSAGE = (
    "No model is configured, so the Query Generator cannot answer questions. Set DIA_MODEL to "
    "a litellm model name and the provider's API key, for example "
    "`export DIA_MODEL=anthropic/claude-sonnet-4-5 ANTHROPIC_API_KEY=...` or "
    "`export DIA_MODEL=ollama/qwen2.5-coder` for a local model. The rest of the pipeline runs without one."
)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str

    def args(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as err:
            raise ValueError(f"tool arguments are not valid JSON: {err}") from err
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


@dataclass
class ChatReply:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)

    def as_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


ChatFn = Callable[[list[dict[str, Any]], list[dict[str, Any]]], ChatReply]


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


# provider errors worth another try: rate limits and transient server trouble. A network
# failure (refused, unreachable, timed out) is not retried: a model that cannot be reached
# now will not be reached in a second, and a person waiting deserves the error at once.
_TRANSIENT = ("RateLimitError", "APIConnectionError", "ServiceUnavailableError",
              "InternalServerError", "BadGatewayError", "APIError")
_PERMANENT = ("AuthenticationError", "PermissionDeniedError", "NotFoundError", "BadRequestError",
              "ContextWindowExceededError", "ContentPolicyViolationError", "UnprocessableEntityError")


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter: attempt n waits base_s * 2**n (at most max_s), or the
    provider's Retry-After when it names one."""

    attempts: int = 3
    base_s: float = 1.0
    max_s: float = 10.0
    jitter: float = 0.25
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, err: BaseException) -> float:
        import random

        after = _retry_after(err)
        if after is not None:
            return min(after, self.max_s)
        wait = min(self.base_s * (2 ** attempt), self.max_s)
        return wait * (1 + self.jitter * random.random())


def _retry_after(err: BaseException) -> float | None:
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


# exception classes (anywhere in the chain) that mean the model's endpoint was not reached or
# did not answer in time: httpx/httpcore transport errors, the OS's own, the SDKs' timeouts
_NETWORK = ("TransportError", "ConnectError", "ConnectTimeout", "TimeoutException", "ConnectionError",
            "TimeoutError", "gaierror", "APITimeoutError", "RemoteProtocolError")
CONNECT_TIMEOUT_S = 5.0


class ModelUnavailable(RuntimeError):
    """The model could not be reached (refused, unreachable, timed out) or kept failing after
    the retries: one line naming the model and the cause, for a person to act on."""

    def __init__(self, model: str, cause: str, where: str | None = None) -> None:
        self.model, self.cause, self.where = model, cause, where
        at = f" at {where}" if where else ""
        super().__init__(f"model {model!r}{at} {cause}")


def _chain(err: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and cur not in out and len(out) < 12:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def is_network_error(err: BaseException) -> bool:
    """True when the request never got an answer: litellm wraps these as APIConnectionError
    or even InternalServerError (status 500), so the chain of causes decides."""
    return any({c.__name__ for c in type(e).__mro__} & set(_NETWORK) for e in _chain(err))


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def unavailable(err: BaseException, model: str, api_base: str | None = None) -> ModelUnavailable:
    """The one-line error for a failed call: the innermost cause (the OS's "Connection
    refused", a timeout) rather than litellm's wrapper text, and where it was sent when we
    know (the call's api_base or the provider's <PROVIDER>_API_BASE / _BASE_URL setting;
    litellm's own debug text names the provider default even when these override it)."""
    root = _chain(err)[-1]
    detail = _one_line(str(root) or type(root).__name__)
    if not api_base and "/" in model:
        provider = model.split("/", 1)[0].upper()
        api_base = os.environ.get(f"{provider}_API_BASE") or os.environ.get(f"{provider}_BASE_URL")
    if is_network_error(err):
        return ModelUnavailable(model, f"is unreachable: {detail}", api_base)
    return ModelUnavailable(model, f"kept failing ({type(err).__name__}): {detail}", api_base)


def is_transient(err: BaseException) -> bool:
    names = {c.__name__ for c in type(err).__mro__}
    if names & set(_PERMANENT) or is_network_error(err):
        return False
    status = getattr(err, "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return True
    return bool(names & set(_TRANSIENT))


def call_with_retries(fn: Callable[..., Any], /, *args: Any, retry: RetryPolicy | None = None,
                      on_retry: Callable[[int, BaseException, float], None] | None = None, **kwargs: Any) -> Any:
    """The one door's retry loop: `fn(*args, **kwargs)` again after a rate limit or a
    transient provider error, with backoff; anything else, or the last failure, is raised."""
    policy = retry or RetryPolicy()
    for attempt in range(policy.attempts):
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            if attempt + 1 >= policy.attempts or not is_transient(err):
                raise
            wait = policy.delay(attempt, err)
            if on_retry is not None:
                on_retry(attempt + 1, err, wait)
            policy.sleep(wait)
    raise AssertionError("unreachable")


def completion(retry: RetryPolicy | None = None, **kwargs: Any) -> Any:
    """`litellm.completion` with retries and backoff: every model call goes through here.
    The SDK's own retries are off (this is the one retry loop) and connecting has its own
    short timeout, so an unreachable model fails in seconds with `ModelUnavailable`; rate
    limits and 5xx answers are retried a few times, then raise `ModelUnavailable` too."""
    import httpx

    litellm = _litellm()
    total = kwargs.pop("timeout", 120.0)
    if not isinstance(total, httpx.Timeout):  # connect bound honoured by openai/azure/bedrock
        total = httpx.Timeout(float(total), connect=min(CONNECT_TIMEOUT_S, float(total)))
    kwargs = {"max_retries": 0, **kwargs, "timeout": total}
    try:
        return call_with_retries(litellm.completion, retry=retry, **kwargs)
    except Exception as err:
        if is_network_error(err) or is_transient(err):
            raise unavailable(err, str(kwargs.get("model")), kwargs.get("api_base")) from err
        raise


def litellm_chat(model: str, temperature: float = 0.0, timeout_s: float = 120.0,
                 retry: RetryPolicy | None = None, **extra: Any) -> ChatFn:
    """A ChatFn over `litellm.completion` with tools, retried with backoff on rate limits and
    transient errors; records tokens, cost and latency (retries' waits included)."""

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        litellm = _litellm()
        started = time.perf_counter()
        # drop_params: some models (reasoning models) reject temperature; litellm drops it for them
        kwargs: dict[str, Any] = {"temperature": temperature, "timeout": timeout_s, "drop_params": True, **extra}
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        response = completion(retry=retry, model=model, messages=messages, **kwargs)
        latency = time.perf_counter() - started
        message = response.choices[0].message
        calls = [
            ToolCall(tc.id or f"call_{i}", tc.function.name, tc.function.arguments or "{}")
            for i, tc in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        usage = getattr(response, "usage", None)
        return ChatReply(
            content=message.content,
            tool_calls=calls,
            usage={
                "model": model,
                "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
                "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
                "cost_usd": _cost(litellm, response, model),
                "latency_s": round(latency, 4),
            },
        )

    return chat


def _cost(litellm: Any, response: Any, model: str) -> float:
    """litellm's cost tracking; custom providers are priced by their model name."""
    for kwargs in ({"model": model}, {}):
        try:
            return float(litellm.completion_cost(completion_response=response, **kwargs))
        except Exception:
            continue
    return 0.0
