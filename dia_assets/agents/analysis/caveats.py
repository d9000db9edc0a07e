"""What verification does not cover. The SQL checks verify the SQL over the step tables;
they cannot tell whether an embedding stage or a light model put the right rows in them. An
answer built on such decisions states their estimated precision, as the operator reports
it, or says they are unverified: "verification: passed" covers the checks only."""

from __future__ import annotations

from collections.abc import Sequence

from dia_assets.contracts.analysis_steps import StepRecord

# stages whose decisions the strong model made (the reference) or that decided nothing
_NOT_A_WEAK_DECISION = ("strong", "undecided", "unresolved")


def _estimate(stage: str, precision: dict[str, float]) -> str:
    found = {k: v for k, v in precision.items() if k == stage or k.startswith(stage + ":")}
    if not found:
        return "unverified"
    return "estimated precision " + ", ".join(
        f"{k.split(':', 1)[1] + ' ' if ':' in k else ''}{float(v):.2f}" for k, v in sorted(found.items()))


def _weak(record: StepRecord) -> dict[str, int]:
    """Rows per stage that decided without the strong model, in one step."""
    mix = (record.operator or {}).get("stage_mix") or {}
    return {s: int(n) for s, n in mix.items() if s not in _NOT_A_WEAK_DECISION and n}


def unverified_rows(records: Sequence[StepRecord]) -> int:
    return sum(sum(_weak(r).values()) for r in records)


def unverified_decisions(records: Sequence[StepRecord]) -> list[str]:
    """One line per semantic step that decided rows without the strong model: how many, by
    which stage, and the operator's precision estimate for that stage ('unverified' if none)."""
    lines = []
    for r in records:
        op = r.operator or {}
        weak = _weak(r)
        if not weak:
            continue
        precision = op.get("precision") or {}
        parts = "; ".join(f"{stage} {n}: {_estimate(stage, precision)}" for stage, n in sorted(weak.items()))
        lines.append(f"{r.step.op} -> {r.output}: {sum(weak.values())} of {op.get('rows_in', '?')} rows "
                     f"decided without the strong model ({parts})")
    return lines


def answer_note(lines: Sequence[str]) -> str:
    """The sentence appended to an answer built on unverified semantic decisions."""
    return ("Note: this answer rests on semantic decisions the verification did not check: "
            + " | ".join(lines) + ".")
