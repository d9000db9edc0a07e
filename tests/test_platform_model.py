"""The platform's model layer: one door that alone imports litellm, one usage record priced one
way, and one scripted model that answers the same whether called directly or through the door."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path

import pytest

from dia_assets.platform.model.base import Reply
from dia_assets.platform.model.litellm import (
    complete_text,
    litellm_chat,
    price,
    register_price,
    register_scripted,
    registered,
)
from dia_assets.platform.model.scripted import ScriptedModel, Turn, call, calls
from dia_assets.platform.model.usage import Usage

ROOT = Path(__file__).resolve().parents[1]
DOOR = "dia_assets/platform/model/litellm.py"


def _imports_litellm(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        if any(n == "litellm" or n.startswith("litellm.") for n in names):
            lines.append(node.lineno)
    return lines


def test_only_the_door_imports_litellm() -> None:
    """Product code and benches reach litellm only through `platform/model/litellm.py`."""
    offenders = [f"{p.relative_to(ROOT)}:{line}"
                 for folder in ("dia_assets", "resources", "sensors", "bench")
                 for p in sorted((ROOT / folder).rglob("*.py")) if p.relative_to(ROOT).as_posix() != DOOR
                 for line in _imports_litellm(p)]
    assert offenders == []
    assert _imports_litellm(ROOT / DOOR)  # the scan does see an import


def test_the_platform_imports_no_agent_and_no_dagster() -> None:
    bad = []
    for p in sorted((ROOT / "dia_assets" / "platform").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{p.relative_to(ROOT)}: {n}" for n in names
                    if n.startswith(("dia_assets.agents", "dagster", "resources", "sensors", "dia_assets.dagster.resources"))]
    assert bad == []


def test_bench_imports_nothing_from_tests() -> None:
    found = [f"{p.name}:{line}" for p in sorted((ROOT / "bench").rglob("*.py"))
             for line, text in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if text.lstrip().startswith(("from tests", "import tests"))]
    assert found == []


def test_a_script_plays_its_steps_and_leaves_the_callers_list_alone() -> None:
    steps = [call("probe", sql="SELECT 1"), calls(call("a", x=1), call("b")), lambda messages: f"{len(messages)} seen"]
    model = ScriptedModel(steps, default="done")
    msgs = [{"role": "user", "content": "hi"}]
    first, second, third, fourth = (model(msgs, []) for _ in range(4))
    assert [(c.id, c.name, c.args()) for c in first.tool_calls] == [("call_1", "probe", {"sql": "SELECT 1"})]
    assert [c.name for c in second.tool_calls] == ["a", "b"] and second.content is None
    assert (third.content, fourth.content) == ("1 seen", "done")
    assert first.usage == {}  # called directly nothing priced it: the loop times the call itself
    assert len(steps) == 3 and len(model.requests) == 4 and model.calls[0] == msgs
    assert "hi" in model.sent()


def test_a_respond_function_sees_the_model_and_the_tools() -> None:
    seen: list[Turn] = []
    model = ScriptedModel(respond=lambda messages, turn: seen.append(turn) or f"turn {turn.index}")
    tools = [{"type": "function", "function": {"name": "submit"}}]
    assert model.reply([{"role": "user", "content": "x"}], tools, "fake/a")[0].content == "turn 0"
    assert seen[0].model == "fake/a" and seen[0].tool_names == ["submit"]


def test_through_the_door_the_reply_is_the_same_and_priced_by_the_registered_name() -> None:
    """A scripted model served as a litellm provider: the door's chat gets the same tool calls,
    and the usage record carries the script's token counts priced by the cost map."""
    register_price("fake/priced", 1e-6, 4e-6, provider="fake")
    script = [call("declare_contract", kind="analytical", columns=["n"]), "the answer"]
    direct = ScriptedModel(script)
    served = register_scripted(ScriptedModel(script, name="fake/priced"))
    assert registered("fake") is served
    msgs = [{"role": "user", "content": "How many staff are there?" * 4}]
    chat = litellm_chat("fake/priced")
    for _ in script:
        want, got = direct(msgs, []), chat(msgs, [])
        assert [(c.name, c.args()) for c in got.tool_calls] == [(c.name, c.args()) for c in want.tool_calls]
        assert got.content == want.content
        usage = got.usage
        assert usage["model"] == "fake/priced" and usage["prompt_tokens"] == len(msgs[0]["content"]) // 4 + 1
        assert usage["cost_usd"] == pytest.approx(usage["prompt_tokens"] * 1e-6 + usage["completion_tokens"] * 4e-6)
        assert usage["latency_s"] >= 0
    assert len(served.requests) == 2 and served.requests[0]["model"].endswith("priced")


def test_text_completions_share_the_usage_record() -> None:
    register_price("fake/priced", 1e-6, 4e-6, provider="fake")
    register_scripted(ScriptedModel(["hello there"], name="fake/priced"))
    text, usage = complete_text("fake/priced", [{"role": "user", "content": "abcdefgh"}], temperature=0.0)
    assert text == "hello there" and isinstance(usage, Usage)
    assert (usage.prompt_tokens, usage.completion_tokens) == (3, 3) and usage.total_tokens == 6
    assert usage.cost_usd == pytest.approx(3e-6 + 12e-6)
    assert set(usage.as_dict()) == {"model", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s"}


def test_an_unknown_model_costs_nothing_and_a_known_response_model_is_priced() -> None:
    class Response:
        model = "unknown-model-xyz"
        usage = None
        choices: list = []

    assert price(Response(), "nobody/knows") == 0.0


def test_the_scripted_model_is_safe_across_threads() -> None:
    """The eval runner calls the oracle from several threads: ids stay unique, no step is lost."""
    model = ScriptedModel([call("t", i=i) for i in range(200)], record=True)
    ids: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(50):
            reply = model([{"role": "user", "content": "q"}], [])
            with lock:
                ids.extend(c.id for c in reply.tool_calls)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == len(set(ids)) == 200 and not model.steps and len(model.requests) == 200


def test_a_reply_becomes_the_assistant_message() -> None:
    reply = ScriptedModel([call("probe", sql="SELECT 1")])([], [])
    assert reply.as_message()["tool_calls"][0]["function"] == {"name": "probe", "arguments": json.dumps({"sql": "SELECT 1"})}
    assert Reply("plain").as_message() == {"role": "assistant", "content": "plain"}
