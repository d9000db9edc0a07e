"""Is answer quality falling? Recent success and verification rates against their own past."""

from __future__ import annotations

from pydantic import BaseModel


class AnswerRecord(BaseModel):
    partition: str
    status: str  # answered | needs_clarification | failed
    verified: bool
    attempts: int = 1
    latency_s: float = 0.0
    timestamp: float = 0.0


class QualityVerdict(BaseModel):
    degraded: bool
    recent_success: float | None
    baseline_success: float | None
    recent_verified: float | None
    baseline_verified: float | None
    failed_partitions: list[str] = []
    reason: str = ""


def assess(records: list[AnswerRecord], window: int = 10, baseline: int = 30, margin: float = 0.15) -> QualityVerdict:
    """Compare the last `window` answers with the `baseline` before them (oldest first)."""
    ordered = sorted(records, key=lambda r: r.timestamp)
    recent, past = ordered[-window:], ordered[-(window + baseline):-window]

    def rate(rows: list[AnswerRecord], ok) -> float | None:  # noqa: ANN001
        return sum(1 for r in rows if ok(r)) / len(rows) if rows else None

    rs, bs = rate(recent, lambda r: r.status == "answered"), rate(past, lambda r: r.status == "answered")
    rv, bv = rate(recent, lambda r: r.verified), rate(past, lambda r: r.verified)
    reasons = []
    if rs is not None and bs is not None and rs < bs - margin:
        reasons.append(f"success rate {rs:.0%} vs baseline {bs:.0%}")
    if rv is not None and bv is not None and rv < bv - margin:
        reasons.append(f"verification pass rate {rv:.0%} vs baseline {bv:.0%}")
    failed = sorted({r.partition for r in recent if r.status != "answered" or not r.verified})
    return QualityVerdict(
        degraded=bool(reasons), recent_success=rs, baseline_success=bs, recent_verified=rv,
        baseline_verified=bv, failed_partitions=failed if reasons else [], reason="; ".join(reasons),
    )
