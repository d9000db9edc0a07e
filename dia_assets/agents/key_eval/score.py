"""Score an interpretation's keys against a truth.json, the way `../shared/datasets/score_keys.py`
does (names compared case-, underscore-, hyphen- and space-insensitively; foreign keys at a
confidence threshold), plus a breakdown by the patterns the generator tags."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dia_assets.contracts.policy import HIGH

FkKey = tuple[str, frozenset[tuple[str, str]], str]


def norm(name: object) -> str:
    return "".join(ch for ch in str(name).lower() if ch not in "_- ")


@dataclass
class KeyScore:
    dataset: str
    pk_hits: int = 0
    pk_total: int = 0
    fk_tp: int = 0
    fk_fp: int = 0
    fk_fn: int = 0
    pk_misses: list[str] = field(default_factory=list)
    fk_missed: list[str] = field(default_factory=list)
    fk_false: list[str] = field(default_factory=list)
    # pattern -> [hits, total]: primary keys and foreign keys (recall) by pattern
    pk_patterns: dict[str, list[int]] = field(default_factory=dict)
    fk_patterns: dict[str, list[int]] = field(default_factory=dict)
    false_kinds: dict[str, int] = field(default_factory=dict)  # why a predicted key is false

    @property
    def fk_f1(self) -> float:
        return f1(self.fk_tp, self.fk_fp, self.fk_fn)


def f1(tp: int, fp: int, fn: int) -> float:
    return 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def _fk_key(child: str, cols: list[str], parent: str, refs: list[str]) -> FkKey:
    return norm(child), frozenset(zip(map(norm, cols), map(norm, refs), strict=True)), norm(parent)


def _show(key: FkKey) -> str:
    child, pairs, parent = key
    pairs_sorted = sorted(pairs)
    return f"{child}({', '.join(a for a, _ in pairs_sorted)}) -> {parent}({', '.join(b for _, b in pairs_sorted)})"


def score_interpretation(truth: dict[str, Any], interp: dict[str, Any], min_conf: float = HIGH,
                         name: str = "") -> KeyScore:
    """`interp`: an interpretation as JSON (`model_dump(by_alias=True)`)."""
    tables = truth["tables"]
    tmap = {}
    for t, tb in tables.items():
        tmap[norm(t)] = t
        tmap.setdefault(norm(Path(tb.get("csv", t)).stem), t)
    score = KeyScore(name or truth.get("db", ""))
    pk_pat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    fk_pat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    predicted_pk: dict[str, frozenset[str] | None] = {}
    for s in interp.get("sources", []):
        t = tmap.get(norm(s.get("name", ""))) or tmap.get(norm(Path(s.get("path", "") or "").stem))
        pk = (s.get("primary_key") or {}).get("columns")
        if t is not None:
            predicted_pk[t] = frozenset(map(norm, pk)) if pk else None
    truth_fks: dict[FkKey, list[str]] = {}
    for t, tb in tables.items():
        if tb.get("primary_key"):
            options = [frozenset(map(norm, k)) for k in [tb["primary_key"], *tb.get("primary_key_alternatives", [])]]
            hit = predicted_pk.get(t) in options
            score.pk_total += 1
            score.pk_hits += hit
            if not hit:
                score.pk_misses.append(f"{t}: predicted {sorted(predicted_pk.get(t) or [])}, declared {tb['primary_key']}")
            for p in tb.get("primary_key_patterns", []) or ["all"]:
                pk_pat[p][0] += hit
                pk_pat[p][1] += 1
        for fk in tb.get("foreign_keys", []):
            truth_fks[_fk_key(t, fk["columns"], fk["ref_table"], fk["ref_columns"])] = fk.get("patterns", [])
    optional = {_fk_key(t, fk["columns"], fk["ref_table"], fk["ref_columns"])
                for t, tb in tables.items() for fk in tb.get("partition_foreign_keys", [])} - set(truth_fks)
    predicted: set[FkKey] = set()
    for fk in interp.get("foreign_keys", []):
        if fk.get("confidence", 0) < min_conf:
            continue
        child = tmap.get(norm(fk["from"]["source"]), fk["from"]["source"])
        parent = tmap.get(norm(fk["to"]["source"]), fk["to"]["source"])
        predicted.add(_fk_key(child, fk["from"]["columns"], parent, fk["to"]["columns"]))
    for key, patterns in truth_fks.items():
        hit = key in predicted
        for p in patterns or ["plain"]:
            fk_pat[p][0] += hit
            fk_pat[p][1] += 1
        fk_pat["all"][0] += hit
        fk_pat["all"][1] += 1
        if not hit:
            score.fk_missed.append(_show(key))
    score.fk_tp = len(predicted & set(truth_fks))
    false = predicted - set(truth_fks) - optional
    score.fk_fp = len(false)
    score.fk_fn = len(set(truth_fks) - predicted)
    kinds: dict[str, int] = defaultdict(int)
    for key in sorted(false, key=_show):
        kind = _false_kind(key, truth_fks)
        kinds[kind] += 1
        score.fk_false.append(f"{_show(key)}  [{kind}]")
    score.false_kinds = dict(kinds)
    score.pk_patterns = dict(pk_pat)
    score.fk_patterns = dict(fk_pat)
    return score


def _false_kind(key: FkKey, truth: dict[FkKey, list[str]]) -> str:
    """Why a predicted foreign key is not declared, for the breakdown."""
    child, pairs, parent = key
    cols = {a for a, _ in pairs}
    for t_child, t_pairs, t_parent in truth:
        t_cols = {a for a, _ in t_pairs}
        if t_child == parent and t_parent == child:
            return "reversed"
        if t_child == child and t_cols == cols:
            return "wrong_parent"
        if t_child == child and cols < t_cols:
            return "implied_by_composite"
        if t_child == child and cols > t_cols:
            return "wider_than_declared"
    return "no_reference"


def summarize(scores: list[KeyScore]) -> dict[str, Any]:
    """Totals over many scored schemas: PK accuracy, FK precision/recall/F1, per pattern."""
    tp, fp, fn = (sum(getattr(s, a) for s in scores) for a in ("fk_tp", "fk_fp", "fk_fn"))
    pk_hits, pk_total = sum(s.pk_hits for s in scores), sum(s.pk_total for s in scores)
    pk_pat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    fk_pat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    kinds: dict[str, int] = defaultdict(int)
    for s in scores:
        for p, (h, n) in s.pk_patterns.items():
            pk_pat[p][0] += h
            pk_pat[p][1] += n
        for p, (h, n) in s.fk_patterns.items():
            fk_pat[p][0] += h
            fk_pat[p][1] += n
        for k, n in s.false_kinds.items():
            kinds[k] += n
    return {
        "schemas": len(scores),
        "pk_accuracy": round(pk_hits / pk_total, 4) if pk_total else 1.0,
        "pk": [pk_hits, pk_total],
        "fk_precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "fk_recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "fk_f1": round(f1(tp, fp, fn), 4),
        "fk": {"tp": tp, "fp": fp, "fn": fn},
        "pk_by_pattern": {p: round(h / n, 4) for p, (h, n) in sorted(pk_pat.items())},
        "fk_recall_by_pattern": {p: round(h / n, 4) for p, (h, n) in sorted(fk_pat.items())},
        "pattern_counts": {"pk": {p: n for p, (_, n) in sorted(pk_pat.items())},
                           "fk": {p: n for p, (_, n) in sorted(fk_pat.items())}},
        "false_fk_kinds": dict(sorted(kinds.items())),
    }
