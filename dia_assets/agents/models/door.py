"""The one model door: every model call in DIA goes through a single litellm Router.

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
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from dia_assets.agents.models.errors import ModelUnavailable, is_network_error, unavailable
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


def _litellm() -> Any:
    """Import lazily: litellm takes seconds to import and must not fetch its cost map."""
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
        _litellm()
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


__all__ = ["DoorSettings", "ModelDoor", "ModelUnavailable", "SettingError", "completion", "door", "embedding",
           "reset_door", "retry_policy"]
