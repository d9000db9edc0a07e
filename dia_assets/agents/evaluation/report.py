"""Summary (JSON) and report (Markdown) of a run, computed from its per-instance records.

EX, soft-F1 and VES are percentages over the scored instances: broken instances (gold failed
or timed out, or the database could not be opened) are listed, never counted against the model.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dia_assets.agents.evaluation.metrics import mean, percentile, ves, ves_ratio
from dia_assets.agents.evaluation.models import (
    EVAL_VERSION,
    FAILURE_CLASSES,
    InstanceRecord,
    RunConfig,
)
from dia_assets.platform.markdown import cell

SUMMARY, REPORT = "summary.json", "report.md"  # the files write_reports leaves in a run folder


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def scores(records: Sequence[InstanceRecord]) -> dict[str, Any]:
    scored = [r for r in records if r.status != "broken"]
    return {
        "n": len(scored),
        "correct": sum(r.ex for r in scored),
        "ex": _pct(mean([r.ex for r in scored])),
        "soft_f1": _pct(mean([r.soft_f1 for r in scored])),
        "ves": None if not scored else (
            None if (v := ves([r.ex for r in scored], [r.ves_reward for r in scored])) is None else round(v, 2)),
        "ves_ratio": None if not scored else (
            None if (v := ves_ratio([r.ex for r in scored], [r.time_ratio for r in scored])) is None
            else round(v, 2)),
    }


def summarize(records: Sequence[InstanceRecord], config: RunConfig | None = None) -> dict[str, Any]:
    scored = [r for r in records if r.status != "broken"]
    broken = [r for r in records if r.status == "broken"]
    preds = [r.prediction for r in scored if r.prediction is not None]
    latencies = [p.latency_s for p in preds]
    failures = Counter(r.failure_class for r in scored if r.ex == 0 and r.failure_class)
    n_fail = sum(failures.values())
    difficulties = sorted({r.difficulty for r in records if r.difficulty}, key=_difficulty_order)
    dbs = sorted({r.db for r in records if r.db})
    return {
        "version": EVAL_VERSION,
        "config": config.model_dump() if config else None,
        "instances": len(records),
        "scored": len(scored),
        "broken": len(broken),
        **{k: v for k, v in scores(records).items() if k != "n"},
        "by_difficulty": {d: scores([r for r in records if r.difficulty == d]) for d in difficulties},
        "by_db": {d: scores([r for r in records if r.db == d]) for d in dbs} if len(dbs) > 1 else {},
        "status_counts": dict(Counter(p.status for p in preds)),
        "failure_classes": {c: {"count": failures.get(c, 0),
                                "share": _pct(failures.get(c, 0) / n_fail) if n_fail else None}
                            for c in FAILURE_CLASSES},
        "attempts_mean": _round(mean([p.attempts for p in preds])),
        "tokens_total": sum(p.tokens for p in preds),
        "tokens_mean": _round(mean([p.tokens for p in preds])),
        "prompt_tokens_total": sum(p.prompt_tokens for p in preds),
        "completion_tokens_total": sum(p.completion_tokens for p in preds),
        "cost_usd_total": round(sum(p.cost_usd for p in preds), 6),
        "cost_usd_mean": _round(mean([p.cost_usd for p in preds]), 6),
        "latency_s": {"mean": _round(mean(latencies)), "p50": _round(percentile(latencies, 50)),
                      "p90": _round(percentile(latencies, 90))},
        "broken_instances": [{"id": r.id, "reason": r.broken_reason} for r in broken],
    }


def _round(value: float | None, places: int = 3) -> float | None:
    return None if value is None else round(value, places)


_DIFFICULTY = ["simple", "easy", "moderate", "medium", "challenging", "hard", "extra"]


def _difficulty_order(name: str) -> tuple[int, str]:
    return (_DIFFICULTY.index(name) if name in _DIFFICULTY else len(_DIFFICULTY), name)


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}{suffix}"
    return f"{value}{suffix}"


def render_markdown(summary: dict[str, Any], records: Sequence[InstanceRecord]) -> str:
    cfg = summary.get("config") or {}
    lines = ["# Evaluation report", ""]
    if cfg:
        lines += [f"- questions: `{cfg.get('questions')}`", f"- database: `{cfg.get('db')}`",
                  f"- solver: `{cfg.get('solver')}`" + (f", model `{cfg['model']}`" if cfg.get("model") else ""),
                  f"- workers {cfg.get('workers')}, timeout {cfg.get('timeout_s')} s, "
                  f"VES timing iterations {cfg.get('ves_iterations')}, started {cfg.get('started_at')}", ""]
    lines += [
        "| instances | scored | broken | correct | EX % | soft-F1 % | VES | time-ratio VES |",
        "|---|---|---|---|---|---|---|---|",
        f"| {summary['instances']} | {summary['scored']} | {summary['broken']} | {summary['correct']} | "
        f"{_fmt(summary['ex'])} | {_fmt(summary['soft_f1'])} | {_fmt(summary['ves'])} | "
        f"{_fmt(summary.get('ves_ratio'))} |", "",
        "EX and soft-F1 follow BIRD's rules (set semantics unless the question requires order, "
        "per-instance decimal precision, any acceptable gold result); VES is mini-dev's reward-based "
        "score (DIA App. A.2), time-ratio VES the original uncapped one (sqrt of the time ratio). "
        "Broken instances (gold failed or timed out) are not counted.", "",
    ]
    lines += _predictions_section(summary.get("predictions"))
    if summary["by_difficulty"]:
        lines += ["## By difficulty", "", "| difficulty | n | correct | EX % | soft-F1 % | VES |", "|---|---|---|---|---|---|"]
        for d, s in summary["by_difficulty"].items():
            lines.append(f"| {d} | {s['n']} | {s['correct']} | {_fmt(s['ex'])} | {_fmt(s['soft_f1'])} | {_fmt(s['ves'])} |")
        lines.append("")
    if summary["by_db"]:
        lines += ["## By database", "", "| database | n | EX % | soft-F1 % |", "|---|---|---|---|"]
        for d, s in summary["by_db"].items():
            lines.append(f"| {d} | {s['n']} | {_fmt(s['ex'])} | {_fmt(s['soft_f1'])} |")
        lines.append("")
    lat = summary["latency_s"]
    lines += ["## Cost and latency", "",
              "- status: " + (", ".join(f"{k} {v}" for k, v in sorted(summary["status_counts"].items())) or "-"),
              f"- attempts per question: {_fmt(summary['attempts_mean'])}",
              f"- tokens: {summary['tokens_total']} in total ({summary['prompt_tokens_total']} prompt, "
              f"{summary['completion_tokens_total']} completion), {_fmt(summary['tokens_mean'])} per question",
              f"- cost: USD {summary['cost_usd_total']:.4f} in total, {_fmt(summary['cost_usd_mean'])} per question",
              f"- latency: p50 {_fmt(lat['p50'], ' s')}, p90 {_fmt(lat['p90'], ' s')}, mean {_fmt(lat['mean'], ' s')}", ""]
    lines += ["## Failure classes (DIA App. C)", "", "| class | count | share % |", "|---|---|---|"]
    for c, v in summary["failure_classes"].items():
        lines.append(f"| {c} | {v['count']} | {_fmt(v['share'])} |")
    lines.append("")
    failed = [r for r in records if r.status == "incorrect"]
    if failed:
        lines += ["## Failed instances", "", "| id | class | detail | soft-F1 |", "|---|---|---|---|"]
        for r in failed:
            detail = cell((r.failure_detail or "")[:160])
            lines.append(f"| {r.id} | {r.failure_class} | {detail} | {r.soft_f1:.2f} |")
        lines.append("")
    if summary["broken_instances"]:
        lines += ["## Broken instances (not counted)", ""]
        lines += [f"- `{b['id']}`: {b['reason'][:200]}" for b in summary["broken_instances"]]
        lines.append("")
    return "\n".join(lines)


def _predictions_section(info: dict[str, Any] | None) -> list[str]:
    """How a predictions file lined up with the question set (`dia eval --predictions`)."""
    if not info:
        return []
    lines = ["## Predictions file", "",
             f"- `{info['file']}` ({info['format']}), keys matched by {info['match']}: "
             f"{info['matched']} of {info['predictions']} predictions matched a question"]
    if info["missing"]:
        lines += [f"- {len(info['missing'])} question(s) without a prediction (scored 0): "
                  + ", ".join(f"`{i}`" for i in info["missing"][:50]) + (" ..." if len(info["missing"]) > 50 else "")]
    if info["unmatched"]:
        lines += [f"- {len(info['unmatched'])} prediction(s) matching no question (not scored): "
                  + ", ".join(f"`{k}`" for k in info["unmatched"][:50]) + (" ..." if len(info["unmatched"]) > 50 else "")]
    if info["db_mismatch"]:
        lines += [f"- {len(info['db_mismatch'])} prediction(s) naming another database than their question "
                  "(run on the question's): " + ", ".join(f"`{m['id']}`" for m in info["db_mismatch"][:50])]
    return [*lines, ""]


def write_reports(summary: dict[str, Any], records: Sequence[InstanceRecord], out_dir: str | Path) -> None:
    out = Path(out_dir)
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    (out / REPORT).write_text(render_markdown(summary, records), encoding="utf-8")
