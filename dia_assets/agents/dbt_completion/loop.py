"""The completion agent: a plain loop over the model door, read top to bottom.

Each turn the model sees the conversation and six tools; each tool call goes through the
gate (`scratch.ScratchProject`) and its result, or the refusal, goes back as the tool's
message. The loop ends when the model calls `finish`, answers without a tool call, or runs
out of turns. The model is any `ChatFn` (`platform.model.litellm.litellm_chat`: the same
door as the Query Generator's), so a scripted model registered with litellm drives it in
tests and the oracle.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dia_assets.agents.dbt_completion.scratch import Refused, ScratchProject
from dia_assets.platform.model.base import ChatFn, ToolCall

PROMPTS = Path(__file__).resolve().parents[2] / "prompts" / "dbt_completion.yaml"
PROMPT: str = yaml.safe_load(PROMPTS.read_text(encoding="utf-8"))["system"]
MAX_RESULT_CHARS = 12_000


def _tool(name: str, description: str, **params: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
        "required": list(params)}}}


TOOLS = [
    _tool("list_files", "Files of the project under a folder.", path="folder relative to the project, '.' for all"),
    _tool("read_file", "A file of the project.", path="path relative to the project"),
    _tool("write_file", "Write (create or replace) a .sql or .yml file under models/.",
          path="path relative to the project, under models/", content="the whole file"),
    _tool("run_dbt", "Run dbt on the project: build, run or test, optionally with --select/--exclude.",
          command="e.g. 'build' or 'run --select my_model'"),
    _tool("query", "One read-only SELECT on the project's DuckDB database (at most 50 rows).", sql="the query"),
    _tool("finish", "End the task; the database is scored as it is.", message="what you did"),
]


@dataclass
class Completion:
    """What happened: the turns, each tool call with its outcome, refusals, dbt runs, usage."""

    status: str = "out_of_turns"  # finished | stopped (text answer) | out_of_turns | error
    message: str = ""
    turns: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    refusals: int = 0
    dbt_runs: int = 0
    last_dbt_ok: bool | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0


def run_tool(scratch: ScratchProject, call: ToolCall, done: Completion) -> str:
    """One tool call through the gate; the text the model sees."""
    try:
        args = call.args()
        if call.name == "list_files":
            out: Any = scratch.list_files(args.get("path") or ".")
        elif call.name == "read_file":
            out = scratch.read_file(args.get("path", ""))
        elif call.name == "write_file":
            out = f"wrote {scratch.write_file(args.get('path', ''), args.get('content', ''))}"
        elif call.name == "run_dbt":
            run = scratch.dbt(args.get("command", ""))
            done.dbt_runs += 1
            done.last_dbt_ok = run.ok
            out = {"returncode": run.returncode, "statuses": run.statuses, "output": run.output}
        elif call.name == "query":
            out = scratch.query(args.get("sql", ""))
        elif call.name == "finish":
            done.status, done.message = "finished", str(args.get("message", ""))
            out = "finished"
        else:
            raise Refused(f"no tool {call.name!r}")
        refused = False
    except (Refused, ValueError) as err:
        out, refused = {"refused": str(err)}, True
        done.refusals += 1
    done.steps.append({"tool": call.name, "arguments": call.arguments[:2000], "refused": refused,
                       "result": (out if isinstance(out, str) else json.dumps(out, default=str))[:2000]})
    text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)
    return text[:MAX_RESULT_CHARS]


def complete_project(chat: ChatFn, scratch: ScratchProject, instruction: str, max_turns: int = 30) -> Completion:
    """Let the model complete the scratch project per `instruction`."""
    done = Completion()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": f"Task: {instruction}\n\nProject files:\n" + "\n".join(scratch.list_files())},
    ]
    while done.turns < max_turns and done.status == "out_of_turns":
        done.turns += 1
        started = time.perf_counter()
        reply = chat(messages, TOOLS)
        done.latency_s += reply.usage.get("latency_s", time.perf_counter() - started)
        done.tokens += int(reply.usage.get("prompt_tokens", 0) or 0) + int(reply.usage.get("completion_tokens", 0) or 0)
        done.cost_usd += float(reply.usage.get("cost_usd", 0.0) or 0.0)
        messages.append(reply.as_message())
        if not reply.tool_calls:
            done.status, done.message = "stopped", reply.content or ""
            break
        for call in reply.tool_calls:
            content = run_tool(scratch, call, done)
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
    return done
