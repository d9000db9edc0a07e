"""Compare two interpretations: schema drift, distribution drift, key breakage."""

from __future__ import annotations

import bisect
import math

from pydantic import BaseModel

from dia_assets.agents.adaptation.kinds import SCHEMA_KINDS, TABLE_KINDS, ChangeKind
from dia_assets.contracts.interpretation import Column, Interpretation, Source
from dia_assets.contracts.policy import HIGH
from dia_assets.platform.settings import Settings, get_settings

DRIFT_VERSION = 1
__all__ = ["ChangeKind", "Change", "DriftReport", "DriftThresholds", "compare"]


def _default(field: str):  # noqa: ANN202
    """A threshold's default is the setting's (platform/settings.py): written once."""
    return Settings.model_fields[field].default


class DriftThresholds(BaseModel):
    """The detectors' thresholds; `from_settings` reads the DIA_DRIFT_* settings (kinds.py says
    which kind each tunes)."""

    null_rate_jump: float = _default("drift_null_jump")  # absolute change in null fraction
    psi: float = _default("drift_psi")  # population stability index; 0.1-0.2 is a moderate shift
    fk_coverage_drop: float = _default("drift_fk_drop")
    psi_min_rows: int = _default("drift_psi_min_rows")  # below this on either side PSI is noise: small-table tests
    small_relative_change: float = _default("drift_small_change")  # small tables: |change| of mean, min or max / scale
    chi_square_p: float = _default("drift_chi2_p")  # small tables: categories differ when the p-value is below this

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> DriftThresholds:
        s = settings or get_settings()
        return cls(null_rate_jump=s.drift_null_jump, psi=s.drift_psi, fk_coverage_drop=s.drift_fk_drop,
                   psi_min_rows=s.drift_psi_min_rows, small_relative_change=s.drift_small_change,
                   chi_square_p=s.drift_chi2_p)


class Change(BaseModel):
    kind: ChangeKind
    source: str
    column: str | None = None
    before: str | None = None
    after: str | None = None
    score: float | None = None
    test: str | None = None  # psi | mean/min/max | chi-square | exact

    def describe(self) -> str:
        where = f"{self.source}.{self.column}" if self.column else self.source
        detail = f": {self.before} -> {self.after}" if self.before is not None or self.after is not None else ""
        score = f" (score {self.score:.3f})" if self.score is not None else ""
        return f"{self.kind} {where}{detail}{score}"


class DriftReport(BaseModel):
    version: int = DRIFT_VERSION
    before: str
    after: str
    changes: list[Change] = []

    @property
    def schema_changed(self) -> bool:
        return any(c.kind in SCHEMA_KINDS for c in self.changes)

    @property
    def any(self) -> bool:
        return bool(self.changes)

    def affected(self) -> dict[str, set[str] | None]:
        """Source -> affected columns; None means the whole source."""
        out: dict[str, set[str] | None] = {}
        for c in self.changes:
            if c.column is None or c.kind in TABLE_KINDS:
                out[c.source] = None
            elif out.get(c.source, set()) is not None:
                cols = out.setdefault(c.source, set())
                assert cols is not None
                cols.add(c.column)
                if c.kind == "column_renamed" and c.before:
                    cols.add(c.before)
        return out


def compare(before: Interpretation, after: Interpretation, limits: DriftThresholds | None = None) -> DriftReport:
    limits = limits or DriftThresholds()
    report = DriftReport(before=before.generated_at, after=after.generated_at)
    add = report.changes.append
    old = {s.name: s for s in before.sources}
    new = {s.name: s for s in after.sources}
    for name in sorted(set(new) - set(old)):
        add(Change(kind="source_added", source=name))
    for name in sorted(set(old) - set(new)):
        add(Change(kind="source_removed", source=name))
    for name in sorted(set(old) & set(new)):
        _compare_source(old[name], new[name], limits, add)
    _compare_foreign_keys(before, after, limits, add)
    return report


def _compare_source(a: Source, b: Source, limits: DriftThresholds, add) -> None:  # noqa: ANN001
    acols = {c.name: c for c in a.columns}
    bcols = {c.name: c for c in b.columns}
    removed = [acols[n] for n in acols if n not in bcols]
    added = [bcols[n] for n in bcols if n not in acols]
    for gone in list(removed):
        twin = next((c for c in added if _same_column(gone, c)), None)
        if twin is not None:
            add(Change(kind="column_renamed", source=a.name, column=twin.name, before=gone.name, after=twin.name))
            removed.remove(gone)
            added.remove(twin)
    for c in removed:
        add(Change(kind="column_removed", source=a.name, column=c.name))
    for c in added:
        add(Change(kind="column_added", source=a.name, column=c.name, after=c.inferred_type))
    for name in sorted(set(acols) & set(bcols)):
        ca, cb = acols[name], bcols[name]
        if ca.inferred_type != cb.inferred_type:
            add(Change(kind="type_changed", source=a.name, column=name, before=ca.inferred_type, after=cb.inferred_type))
            continue
        jump = cb.null_fraction - ca.null_fraction
        if abs(jump) >= limits.null_rate_jump:
            add(Change(kind="null_rate_jump", source=a.name, column=name,
                       before=f"{ca.null_fraction:.3f}", after=f"{cb.null_fraction:.3f}", score=abs(jump)))
        if min(a.row_count, b.row_count) >= limits.psi_min_rows:
            psi = column_psi(ca, cb, a.row_count, b.row_count)
            if psi is not None and psi >= limits.psi:
                add(Change(kind="distribution_shift", source=a.name, column=name, score=psi, test="psi"))
        else:
            shift = small_table_shift(ca, cb, a.row_count, b.row_count, limits)
            if shift is not None:
                add(Change(kind="distribution_shift", source=a.name, column=name, before=shift[1], after=shift[2],
                           score=shift[0], test=shift[3]))
    if b.duplicate_rows > a.duplicate_rows:
        add(Change(kind="duplicate_rows_grew", source=a.name, before=str(a.duplicate_rows), after=str(b.duplicate_rows),
                   score=float(b.duplicate_rows - a.duplicate_rows), test="exact"))
    if a.primary_key and a.primary_key.confidence >= HIGH and (
        b.primary_key is None or b.primary_key.columns != a.primary_key.columns
        or b.primary_key.confidence < HIGH
    ):
        add(Change(kind="primary_key_broken", source=a.name, before=", ".join(a.primary_key.columns),
                   after=b.primary_key.reason if b.primary_key else "no key"))


def _same_column(a: Column, b: Column) -> bool:
    """A rename keeps type and values: same SQL type, distinct and null counts within 2%."""
    def close(x: int, y: int) -> bool:
        return abs(x - y) <= max(1, 0.02 * max(x, y))

    return a.inferred_type == b.inferred_type and close(a.distinct_count, b.distinct_count) and close(a.null_count, b.null_count)


def _compare_foreign_keys(before: Interpretation, after: Interpretation, limits: DriftThresholds, add) -> None:  # noqa: ANN001
    def key(fk) -> tuple:  # noqa: ANN001
        return fk.from_.source, tuple(fk.from_.columns), fk.to.source, tuple(fk.to.columns)

    now = {key(fk): fk for fk in after.foreign_keys}
    for fk in before.foreign_keys:
        if fk.confidence < HIGH:
            continue
        cur = now.get(key(fk))
        coverage = cur.coverage if cur else 0.0
        if fk.coverage - coverage >= limits.fk_coverage_drop:
            add(Change(kind="fk_coverage_drop", source=fk.from_.source, column=", ".join(fk.from_.columns),
                       before=f"{fk.coverage:.3f}", after=f"{coverage:.3f}" if cur else "missing",
                       score=fk.coverage - coverage))


# ------------------------------------------------------------------ PSI

EPS = 1e-4


def _psi(p: list[float], q: list[float]) -> float:
    return sum((b - a) * math.log((b + EPS) / (a + EPS)) for a, b in zip(p, q, strict=True))


def column_psi(a: Column, b: Column, rows_a: int, rows_b: int) -> float | None:
    """PSI over numeric deciles or categorical top values; None when not comparable."""
    if min(rows_a, rows_b) < 1:
        return None
    if a.quantiles and b.quantiles and len(a.quantiles) == len(b.quantiles):
        edges = sorted(set(a.quantiles))
        return _psi(_bin_mass(a, edges), _bin_mass(b, edges))
    if a.top_values and b.top_values:
        keys = sorted({str(v) for v, _ in a.top_values} | {str(v) for v, _ in b.top_values})
        pa = {str(v): n / rows_a for v, n in a.top_values}
        pb = {str(v): n / rows_b for v, n in b.top_values}
        p = [pa.get(k, 0.0) for k in keys] + [max(0.0, 1 - sum(pa.values()))]
        q = [pb.get(k, 0.0) for k in keys] + [max(0.0, 1 - sum(pb.values()))]
        return _psi(p, q)
    return None


def _bin_mass(col: Column, edges: list[float]) -> list[float]:
    """Share of a column's values in the bins the edges cut, read off its own deciles.
    Both sides are binned the same way, so ties and identical data give a PSI of 0."""
    qs = col.quantiles
    lo = float(col.min) if _num(col.min) else qs[0]
    hi = float(col.max) if _num(col.max) else qs[-1]
    xs = [min(lo, qs[0]), *qs, max(hi, qs[-1])]
    ys = [0.0, *[0.1 * (i + 1) for i in range(len(qs))], 1.0]

    def cdf(x: float) -> float:
        """Share of values <= x, linear between known quantiles, the upper end at ties."""
        if x < xs[0]:
            return 0.0
        if x >= xs[-1]:
            return 1.0
        i = bisect.bisect_right(xs, x)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)

    bounds = [0.0, *[cdf(e) for e in edges], 1.0]
    return [max(0.0, bounds[i + 1] - bounds[i]) for i in range(len(bounds) - 1)]


def _num(text: str | None) -> bool:
    try:
        float(text)  # type: ignore[arg-type]
        return True
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------------ small tables


def small_table_shift(
    a: Column, b: Column, rows_a: int, rows_b: int, limits: DriftThresholds
) -> tuple[float, str, str, str] | None:
    """(score, before, after, test) when a small table's column moved, else None.

    Numbers: the change of mean, min or max relative to the column's scale (the larger of
    its range and |mean| before) beyond `small_relative_change`. Categories: a chi-square
    test of the two count tables, p-value below `chi_square_p`."""
    if min(rows_a, rows_b) < 1:
        return None
    if a.mean is not None and b.mean is not None and _num(a.min) and _num(b.min) and _num(a.max) and _num(b.max):
        lo_a, hi_a, lo_b, hi_b = float(a.min), float(a.max), float(b.min), float(b.max)  # type: ignore[arg-type]
        scale = max(hi_a - lo_a, abs(a.mean), 1e-9)
        moved = max(abs(b.mean - a.mean), abs(lo_b - lo_a), abs(hi_b - hi_a)) / scale
        if moved > limits.small_relative_change:
            return (moved, f"mean {a.mean:.4g} [{lo_a:g}, {hi_a:g}]", f"mean {b.mean:.4g} [{lo_b:g}, {hi_b:g}]",
                    "mean/min/max")
        return None
    if a.top_values and b.top_values and not a.unique and not b.unique:
        p = chi_square_p(dict(_counts(a, rows_a)), dict(_counts(b, rows_b)))
        if p is not None and p < limits.chi_square_p:
            return (1 - p, f"{len(a.top_values)} categories", f"{len(b.top_values)} categories", "chi-square")
    return None


def _counts(col: Column, rows: int) -> list[tuple[str, int]]:
    out = [(str(v), n) for v, n in col.top_values]
    rest = rows - sum(n for _, n in col.top_values)
    return out + ([("(other)", rest)] if rest > 0 else [])


def chi_square_p(a: dict[str, int], b: dict[str, int]) -> float | None:
    """p-value of Pearson's chi-square test of homogeneity of two count tables (the
    Wilson-Hilferty normal approximation of the chi-square distribution; no SciPy)."""
    keys = sorted(set(a) | set(b))
    na, nb = sum(a.values()), sum(b.values())
    if len(keys) < 2 or not na or not nb:
        return None
    stat = 0.0
    for k in keys:
        total = a.get(k, 0) + b.get(k, 0)
        for observed, n in ((a.get(k, 0), na), (b.get(k, 0), nb)):
            expected = total * n / (na + nb)
            stat += (observed - expected) ** 2 / expected if expected else 0.0
    dof = len(keys) - 1
    z = ((stat / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))
