"""`dia doctor`: one cheap call to each configured model through the model door, and for a
failure one line that says what to change (the key, the base URL, the model name)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dia_assets.platform.model.errors import ModelUnavailable, is_network_error, one_line
from dia_assets.platform.model.litellm import MODEL_VARS, completion, load
from dia_assets.platform.settings import FIELDS, get_settings, load_settings

# where litellm sends each provider when no base URL is set (its own defaults)
_DEFAULT_BASE = {"ollama": "http://localhost:11434", "ollama_chat": "http://localhost:11434"}
_BASE_VARS = {"openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL")}


@dataclass(frozen=True)
class Check:
    """One model's result: `line` is what a person reads."""

    var: str
    model: str
    ok: bool
    line: str


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "openai"


def base_vars(provider: str) -> tuple[str, ...]:
    """The environment variables litellm reads for the provider's base URL, first wins."""
    return _BASE_VARS.get(provider, (f"{provider.upper()}_API_BASE",))


def endpoint(model: str, env: Mapping[str, str]) -> str | None:
    provider = provider_of(model)
    return next((env[v] for v in base_vars(provider) if env.get(v)), None) or _DEFAULT_BASE.get(provider)


def preflight(model: str) -> str | None:
    """A problem found without calling: an unknown provider or a missing API key."""
    litellm = load()
    try:
        litellm.get_llm_provider(model)
    except Exception:
        return (f"litellm does not know the provider of {model!r}: write <provider>/<model>, e.g. "
                "openai/<name>, anthropic/<name>, ollama/<name>, hosted_vllm/<name> "
                "(all providers: python -c 'import litellm; print(litellm.provider_list)')")
    missing = [k for k in litellm.validate_environment(model).get("missing_keys", []) if k.endswith("_KEY")]
    if missing:
        hint = " (any value for a local server that needs none)" if provider_of(model) == "openai" else ""
        return f"no API key: set {' and '.join(missing)}{hint}"
    return None


def explain(err: BaseException, model: str, env: Mapping[str, str]) -> str:
    """One line naming the cause and the fix for a failed call."""
    names = {c.__name__ for c in type(err).__mro__}
    where = endpoint(model, env)
    base = " or ".join(base_vars(provider_of(model)))
    if isinstance(err, ModelUnavailable) and is_network_error(err.__cause__ or err) or is_network_error(err):
        at = getattr(err, "where", None) or where or "the provider's default endpoint"
        cause = getattr(err, "cause", "is unreachable").removeprefix("is unreachable: ")
        return f"cannot reach {at}: {cause}; start the server or set {base} to its URL"
    if names & {"AuthenticationError", "PermissionDeniedError"}:
        keys = ", ".join(k for k in load().validate_environment(model).get("missing_keys", []) if k.endswith("_KEY"))
        key = keys or f"{provider_of(model).upper()}_API_KEY"
        return f"the key was refused ({one_line(str(err), 120)}); check {key}"
    if names & {"NotFoundError"} or getattr(err, "status_code", None) == 404:
        return (f"the endpoint{' at ' + where if where else ''} does not serve {model.split('/', 1)[-1]!r}; "
                "check the model name after the provider prefix")
    if names & {"BadRequestError"} and "provider" in str(err).lower():
        return preflight("?") or one_line(str(err))
    return one_line(f"{type(err).__name__}: {err}")


def check(var: str, model: str, env: Mapping[str, str] | None = None,
          complete: Callable[..., Any] | None = None) -> Check:
    """One cheap call (a few tokens) to `model` through the door."""
    env = os.environ if env is None else env
    problem = preflight(model)
    if problem:
        return Check(var, model, False, f"{var}={model}: FAILED: {problem}")
    try:
        response = (complete or completion)(model=model, messages=[{"role": "user", "content": "Reply with the word ok."}],
                            max_tokens=5, temperature=0.0, timeout=30.0, drop_params=True)
    except Exception as err:
        return Check(var, model, False, f"{var}={model}: FAILED: {explain(err, model, env)}")
    text = one_line(response.choices[0].message.content or "", 40)
    return Check(var, model, True, f"{var}={model}: ok (answered {text!r})")


def configured(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(variable, model) for every model setting, fallbacks included."""
    settings = get_settings() if env is None else load_settings(env)
    pairs = [(v, getattr(settings, FIELDS[v])) for v in MODEL_VARS if getattr(settings, FIELDS[v])]
    pairs += [("DIA_MODEL_FALLBACKS", m) for m in settings.fallbacks]
    return pairs


def doctor(env: Mapping[str, str] | None = None, models: list[tuple[str, str]] | None = None) -> list[Check]:
    """Every configured model checked once (each distinct model one call)."""
    pairs = models if models is not None else configured(env)
    seen: dict[str, Check] = {}
    out = []
    for var, model in pairs:
        result = seen.get(model) or check(var, model, env)
        seen[model] = result
        out.append(Check(var, model, result.ok, result.line.replace(f"{result.var}=", f"{var}=", 1)))
    return out
