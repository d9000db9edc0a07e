"""The one model door, and the only module that imports litellm (lazily: it takes seconds).
Every model call in DIA goes through a single litellm Router.

The Router owns retries with backoff, fallbacks, the shared in-flight limit and timeouts; DIA
keeps no retry loop of its own. What DIA adds is the setting of that Router from the
environment and one-line errors a person can act on (`ModelUnavailable`).

Calls run on one event loop in a background thread, because the Router holds a deployment's
`max_parallel_requests` slot only on its async path: funnelling every caller (threads of the
evaluation runner, the semantic operators, a question) through that loop is what makes the limit
shared within a process."""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from dia_assets.platform.model.base import ChatFn, Reply, ToolCall
from dia_assets.platform.model.errors import ModelUnavailable, is_network_error, unavailable
from dia_assets.platform.model.scripted import ScriptedModel
from dia_assets.platform.model.usage import Usage
from dia_assets.platform.settings import FIELDS, SettingsError, get_settings, load_settings

# model settings, each checked and named in its error by dia_assets.platform.settings
MODEL_VARS = ("DIA_MODEL", "DIA_SEMANTIC_LIGHT_MODEL", "DIA_SEMANTIC_STRONG_MODEL")
CONNECT_TIMEOUT_S = 5.0
CLOSE_WAIT_S = 5.0  # how long exit waits for the door's loop thread to finish what it is doing
SettingError = SettingsError  # the name this module exported before the settings object


@dataclass(frozen=True)
class DoorSettings:
    """How the Router is built. `retries` is for transient provider errors (503) and
    `rate_limit_retries` for 429s (worth more patience); a refused connection, a timeout, an
    authentication or request error get none, so they fail in seconds."""

    models: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    retries: int = 2
    rate_limit_retries: int = 4
    max_parallel: int | None = None
    timeout_s: float = 120.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DoorSettings:
        """From the process's settings, or from `env` (a mapping of DIA_* variables)."""
        settings = get_settings() if env is None else load_settings(env)
        models = tuple(dict.fromkeys(m for m in (getattr(settings, FIELDS[v]) for v in MODEL_VARS) if m))
        return cls(
            models=models,
            fallbacks=settings.fallbacks,
            retries=settings.model_retries,
            rate_limit_retries=settings.model_rate_limit_retries,
            max_parallel=settings.model_max_parallel,
            timeout_s=settings.model_timeout_s,
        )


def retry_policy(settings: DoorSettings) -> Any:
    """litellm's RetryPolicy: retries for rate limits and 503s only. litellm reports a refused
    connection as an InternalServerError (the OpenAI client's "Connection error.") and other
    providers' as APIConnectionError (DefaultRetries), so both get none: an unreachable model
    fails at once, and a genuine HTTP 500 goes to the fallbacks instead of being retried."""
    from litellm.types.router import RetryPolicy

    return RetryPolicy(
        RateLimitErrorRetries=settings.rate_limit_retries,
        ServiceUnavailableErrorRetries=settings.retries,
        InternalServerErrorRetries=0,
        TimeoutErrorRetries=0,
        AuthenticationErrorRetries=0,
        BadRequestErrorRetries=0,
        NotFoundErrorRetries=0,
        ContentPolicyViolationErrorRetries=0,
        DefaultRetries=0,
    )


def load() -> Any:
    """litellm, imported lazily: litellm takes seconds to import and must not fetch its cost map."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _deployment(model: str, settings: DoorSettings) -> dict[str, Any]:
    params: dict[str, Any] = {"model": model}
    if settings.max_parallel:
        params["max_parallel_requests"] = settings.max_parallel
    return {"model_name": model, "litellm_params": params}


@dataclass
class ModelDoor:
    """A Router built from `settings`, served on its own event loop. Models a call names that
    are not configured are added as deployments on first use, with the same limits.
    `host` replaces litellm's PythonHost (tests record the Router's backoff sleeps with it)."""

    settings: DoorSettings
    host: Any = None
    _router: Any = field(init=False, default=None)
    _known: set[str] = field(init=False, default_factory=set)
    _loop: asyncio.AbstractEventLoop | None = field(init=False, default=None)
    _thread: threading.Thread | None = field(init=False, default=None)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def _build(self) -> Any:
        load()
        from litellm import Router
        from litellm.router import router_arguments
        from litellm.router_config import build_router_config

        names = dict.fromkeys((*self.settings.models, *self.settings.fallbacks))
        arguments = router_arguments(
            model_list=[_deployment(m, self.settings) for m in names],
            num_retries=max(self.settings.retries, self.settings.rate_limit_retries),
            retry_policy=retry_policy(self.settings),
            default_fallbacks=list(self.settings.fallbacks) or None,
            timeout=self.settings.timeout_s,
            disable_cooldowns=True,  # one deployment per model: a cooldown would only hide the error
        )
        config = build_router_config(arguments)
        self._known = set(names)
        return Router.from_config(config, self.host) if self.host is not None else Router.from_config(config)

    def router(self, model: str | None = None) -> Any:
        with self._lock:
            if self._router is None:
                self._router = self._build()
            if model and model not in self._known:
                from litellm.types.router import Deployment

                self._router.add_deployment(Deployment(**_deployment(model, self.settings)))
                self._known.add(model)
            return self._router

    def _run(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="dia-model-door", daemon=True)
                self._thread.start()
                atexit.register(self.close)
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(make(), loop).result()

    def _defaults(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A short connect bound and no SDK retries: the Router is the one retry loop."""
        import httpx

        total = kwargs.pop("timeout", None) or self.settings.timeout_s
        if not isinstance(total, httpx.Timeout):  # connect bound honoured by openai/azure/bedrock
            total = httpx.Timeout(float(total), connect=min(CONNECT_TIMEOUT_S, float(total)))
        return {"max_retries": 0, **kwargs, "timeout": total}

    def completion(self, **kwargs: Any) -> Any:
        """`Router.acompletion` with DIA's defaults. Raises `ModelUnavailable` for an unreachable
        model or one that kept failing through retries and fallbacks; other errors pass through."""
        model = str(kwargs.get("model") or "")
        kwargs = self._defaults(kwargs)
        router = self.router(model)
        try:
            return self._run(lambda: router.acompletion(**kwargs))
        except Exception as err:
            if _gives_up(err):
                raise unavailable(err, model, kwargs.get("api_base")) from err
            raise

    def embedding(self, **kwargs: Any) -> Any:
        """`Router.aembedding` under the same defaults, limits and errors, without fallbacks:
        the fallbacks are chat models, and another model's vectors would not compare anyway."""
        model = str(kwargs.get("model") or "")
        kwargs = {"disable_fallbacks": True, **self._defaults(kwargs)}
        router = self.router(model)
        try:
            return self._run(lambda: router.aembedding(**kwargs))
        except Exception as err:
            if _gives_up(err):
                raise unavailable(err, model, kwargs.get("api_base")) from err
            raise

    def close(self) -> None:
        """Stop the loop and wait for its thread (also at exit): a daemon thread frozen at
        interpreter exit in the middle of one of litellm's lazy imports holds the import lock, and
        litellm's HTTP handlers import in `__del__`, so the exit then hung (seen: `dia doctor`
        printing its answer and never returning)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop, self._thread = None, None
        if loop is None:
            return
        loop.call_soon_threadsafe(_cancel_and_stop, loop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=CLOSE_WAIT_S)


def _cancel_and_stop(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.call_soon(loop.stop)


def _gives_up(err: BaseException) -> bool:
    """Errors that mean "the model is not there or keeps failing" (as opposed to a request
    the model refused, which the caller reports itself)."""
    if is_network_error(err):
        return True
    status = getattr(err, "status_code", None)
    names = {c.__name__ for c in type(err).__mro__}
    return (isinstance(status, int) and (status == 429 or status >= 500)) or bool(
        names & {"RateLimitError", "ServiceUnavailableError", "InternalServerError", "APIConnectionError",
                 "BadGatewayError", "Timeout"}
    )


_DOOR: ModelDoor | None = None
_DOOR_PID: int | None = None
_PINNED = False
_DOOR_LOCK = threading.Lock()


def door() -> ModelDoor:
    """The process's door, built from the environment on first use, and again when the model
    settings change or in a forked child (whose copy of the loop thread does not run). A door
    installed with `reset_door` is used as it is."""
    global _DOOR, _DOOR_PID
    settings = None if _PINNED else DoorSettings.from_env()
    with _DOOR_LOCK:
        stale = _DOOR is None or os.getpid() != _DOOR_PID or (settings is not None and _DOOR.settings != settings)
        if stale:
            host = _DOOR.host if _DOOR is not None else None
            _DOOR, _DOOR_PID = ModelDoor(settings or DoorSettings.from_env(), host=host), os.getpid()
        assert _DOOR is not None
        return _DOOR


def reset_door(new: ModelDoor | None = None) -> ModelDoor | None:
    """Install `new` as the process's door (a test's own), or with None go back to a door
    built from the environment; returns the old one."""
    global _DOOR, _DOOR_PID, _PINNED
    with _DOOR_LOCK:
        old, _DOOR, _DOOR_PID, _PINNED = _DOOR, new, (os.getpid() if new is not None else None), new is not None
    return old


def completion(**kwargs: Any) -> Any:
    """`litellm` completion through the process's door: every model call goes through here."""
    return door().completion(**kwargs)


def embedding(**kwargs: Any) -> Any:
    return door().embedding(**kwargs)


# -- usage and pricing ---------------------------------------------------------------------------


def price(response: Any, model: str) -> float:
    """The call's cost in USD by litellm's cost map: priced as the model asked for (a custom
    provider's registered name), else as the model the response names, else 0 (unknown)."""
    litellm = load()
    for kwargs in ({"model": model}, {}):
        try:
            return float(litellm.completion_cost(completion_response=response, **kwargs))
        except Exception:
            continue
    return 0.0


def usage_of(response: Any, model: str, started: float) -> Usage:
    """The usage record of a call that started at `started` (`time.perf_counter()`)."""
    return Usage.of(response, model, price(response, model), time.perf_counter() - started)


def complete_text(model: str, messages: list[dict[str, Any]], complete: Callable[..., Any] | None = None,
                  **kwargs: Any) -> tuple[str, Usage]:
    """The first choice's text and the call's usage; `complete` replaces the door (a test's)."""
    started = time.perf_counter()
    response = (complete or completion)(model=model, messages=messages, **kwargs)
    return response.choices[0].message.content or "", usage_of(response, model, started)


def litellm_chat(model: str, temperature: float = 0.0, timeout_s: float = 120.0, **extra: Any) -> ChatFn:
    """A tool-calling `ChatFn` over the door; each reply carries its usage (the Router's retry
    waits count in the latency)."""

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        started = time.perf_counter()
        # drop_params: some models (reasoning models) reject temperature; litellm drops it for them
        kwargs: dict[str, Any] = {"temperature": temperature, "timeout": timeout_s, "drop_params": True, **extra}
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        response = completion(model=model, messages=messages, **kwargs)
        message = response.choices[0].message
        found = [
            ToolCall(tc.id or f"call_{i}", tc.function.name, tc.function.arguments or "{}")
            for i, tc in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        return Reply(content=message.content, tool_calls=found, usage=usage_of(response, model, started).as_dict())

    return chat


def token_count(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                model: str = "gpt-4o") -> int:
    """Prompt tokens as litellm counts them for `model` (gpt-4o: the prompt budget's unit)."""
    return int(load().token_counter(model=model, messages=messages, tools=tools))


# -- scripted providers ----------------------------------------------------------------------------


def register_price(model: str, input_per_token: float, output_per_token: float, provider: str) -> None:
    """Put `model` in litellm's cost map, so `price` works for a custom provider's model."""
    load().register_model({model: {
        "input_cost_per_token": input_per_token, "output_cost_per_token": output_per_token,
        "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
        "litellm_provider": provider, "mode": "chat", "supports_function_calling": True,
    }})


_REGISTER_LOCK = threading.Lock()


def register_scripted(scripted: ScriptedModel, provider: str = "fake") -> ScriptedModel:
    """Serve `<provider>/<any name>` with `scripted` through litellm (replacing that provider's
    handler, keeping other providers), so calls go through the door as a real model's would."""
    litellm = load()
    handler = _provider(scripted)
    with _REGISTER_LOCK:
        current = [p for p in (getattr(litellm, "custom_provider_map", None) or []) if p.get("provider") != provider]
        litellm.custom_provider_map = [*current, {"provider": provider, "custom_handler": handler}]
        litellm.utils.custom_llm_setup()
    return scripted


def registered(provider: str) -> ScriptedModel | None:
    """The scripted model serving `provider`, if one is registered."""
    for p in getattr(load(), "custom_provider_map", None) or []:
        if p.get("provider") == provider:
            return getattr(p.get("custom_handler"), "scripted", None)
    return None


def _provider(scripted: ScriptedModel) -> Any:
    """A litellm CustomLLM whose replies `scripted` plays."""
    load()
    from litellm import CustomLLM, ModelResponse
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message
    from litellm.types.utils import Usage as LitellmUsage

    class Scripted(CustomLLM):
        def __init__(self) -> None:
            super().__init__()
            self.scripted = scripted

        async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            """The door calls the async path; the script itself is synchronous."""
            return self.completion(*args, **kwargs)

        def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            messages = kwargs.get("messages") or []
            tools = (kwargs.get("optional_params") or {}).get("tools")
            reply, tokens = scripted.reply(messages, tools, str(kwargs.get("model") or ""))
            if reply.tool_calls:
                message = Message(content=None, role="assistant", tool_calls=[ChatCompletionMessageToolCall(
                    id=c.id, type="function", function=Function(name=c.name, arguments=c.arguments))
                    for c in reply.tool_calls])
                finish = "tool_calls"
            else:
                message, finish = Message(content=reply.content, role="assistant"), "stop"
            prompt, out = tokens["prompt_tokens"], tokens["completion_tokens"]
            return ModelResponse(
                model=scripted.name, choices=[Choices(index=0, finish_reason=finish, message=message)],
                usage=LitellmUsage(prompt_tokens=prompt, completion_tokens=out, total_tokens=prompt + out))

    return Scripted()


__all__ = ["DoorSettings", "ModelDoor", "ModelUnavailable", "SettingError", "complete_text", "completion",
           "door", "embedding", "litellm_chat", "load", "price", "register_price", "register_scripted",
           "registered", "reset_door", "retry_policy", "token_count", "usage_of"]
