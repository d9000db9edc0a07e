"""The four semantic operators. Each one: embed the column; with a model, train a cheap
proxy on a random sample the strong model judges and let it decide only the sides it is
certified for on held-out rows (`calibrate`: precision >= target with 95% confidence);
without one, fixed similarity cuts. The rest goes to the light model, then the strong one;
results, per-row provenance and the guarantee per side become DuckDB tables and the report.

`ops = SemanticOps(con, embedder)`; `ops.sem_filter("reviews", "text", "complains about
delivery", out="late_reviews")` returns an `OperatorReport`."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from dia_assets.agents.semantic_ops import calibrate, proxy
from dia_assets.agents.semantic_ops.cascade import Models, Pending, resolve
from dia_assets.agents.semantic_ops.judge import JudgeTask
from dia_assets.agents.semantic_ops.models import (
    CascadeConfig,
    Decision,
    Guarantee,
    OperatorReport,
    SemanticModelMissing,
    SemanticModelUnavailable,
    SemanticOpError,
    Thresholds,
    missing_model_message,
)
from dia_assets.agents.semantic_ops.tables import (
    columns_of,
    drop_temp,
    qcol,
    quote,
    stage_input,
    write_decisions,
)
from dia_assets.agents.semantic_ops.vectors import InProcessIndex, VectorIndex
from dia_assets.platform.embeddings import Embedder

MAX_UNPRUNED_PAIRS = 10_000


def _mix(decisions: Sequence[Decision]) -> dict[str, int]:
    return dict(Counter(d.stage for d in decisions))


def _require_model(cfg: CascadeConfig, operator: str) -> None:
    """Refuse before any row is decided when no model stage is configured (unless the caller
    explicitly accepts unverified embedding-only decisions)."""
    if not (cfg.light_model or cfg.strong_model or cfg.allow_unverified):
        raise SemanticModelMissing(missing_model_message(operator))


def _stopped(err: SemanticModelUnavailable, ids: Sequence[str]) -> list[Decision]:
    """Every row of a run a model outage stopped: the decided ones as decided (with the stage
    that decided them), the rest `undecided`."""
    decided = {d.id: d for d in err.decided}
    for i, ans in err.answers.items():  # a calibration sample's answers before the outage
        decided.setdefault(i, Decision(id=i, value=ans.value, stage=err.stage,  # type: ignore[arg-type]
                                       confidence=ans.confidence))
    return [decided.get(i) or Decision(id=i, stage="undecided") for i in ids]


def _finish(report: OperatorReport, failure: SemanticModelUnavailable | None) -> OperatorReport:
    """The report, or, after an outage, the partial report raised with the error. The proxy's
    certified sides state their precision as the held-out lower bound (what is guaranteed)."""
    if report.guarantee is not None:
        report.precision.update({f"proxy:{s.side}": round(s.lower_bound, 4) for s in report.guarantee.sides
                                 if s.decided and s.lower_bound is not None})
    if failure is None:
        return report
    report.status, report.error = "partial", str(failure)
    failure.report = report
    raise failure


@dataclass
class SemanticOps:
    """Operators over one DuckDB connection (inputs read and outputs written there)."""

    con: duckdb.DuckDBPyConnection
    embedder: Embedder
    config: CascadeConfig = field(default_factory=CascadeConfig)
    index: VectorIndex = field(default_factory=InProcessIndex)
    models_factory: Any = None  # CascadeConfig -> Models; tests may inject

    def _models(self, config: CascadeConfig) -> Models:
        return (self.models_factory or Models.from_config)(config)

    def _cfg(self, overrides: dict[str, Any] | None, operator: str) -> CascadeConfig:
        cfg = self.config.model_copy(update=overrides or {})
        _require_model(cfg, operator)
        return cfg

    @staticmethod
    def _resolve(pending: Sequence[Pending], task: JudgeTask, models: Models,
                 decided: Sequence[Decision]) -> list[Decision]:
        """`resolve`, and after an outage the decisions made before it travel with the error."""
        try:
            return resolve(pending, task, models)
        except SemanticModelUnavailable as err:
            err.keep(list(decided))
            raise

    def _scores(self, ids: Sequence[str], vectors: np.ndarray, query: np.ndarray) -> dict[str, float]:
        """Inner-product scores of every row, through the vector index."""
        collection = f"sem:{uuid.uuid4().hex}"
        self.index.add(collection, ids, vectors)
        try:
            return dict(self.index.search(collection, query))
        finally:
            self.index.drop(collection)

    # ------------------------------------------------------------------ sem_filter
    def sem_filter(self, table: str, column: str, condition: str, out: str,
                   config: dict[str, Any] | None = None) -> OperatorReport:
        """Rows of `table` whose `column` satisfies `condition`, into table `out`."""
        if not condition.strip():
            raise SemanticOpError("sem_filter needs a condition")
        cfg = self._cfg(config, "sem_filter")
        quote(out)
        alias = f"__sem_in_{uuid.uuid4().hex[:8]}"
        rows = stage_input(self.con, table, column, alias)
        failure: SemanticModelUnavailable | None = None
        try:
            try:
                decisions, thresholds, models, guarantee = self._binary(
                    rows, JudgeTask("filter", condition), condition, cfg,
                    payload=lambda text: text,
                )
                usage = models.usage()
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, thresholds, usage, failure = _stopped(err, [i for i, _ in rows]), Thresholds(), err.usage, err
                guarantee = None
            write_decisions(self.con, f"{out}__decisions", decisions)
            self.con.execute(
                f"CREATE OR REPLACE TABLE {quote(out)} AS SELECT s.*, d._stage, d._score "
                f"FROM {qcol(alias)} s JOIN {quote(out + '__decisions')} d USING (_row) "
                f"WHERE d.value = 'true' ORDER BY s._row")
            rows_out = self.con.execute(f"SELECT count(*) FROM {quote(out)}").fetchone()[0]
        finally:
            drop_temp(self.con, alias)
        return _finish(OperatorReport(
            operator="sem_filter", source=table, column=column, argument=condition,
            output_table=out, decisions_table=f"{out}__decisions", rows_in=len(rows),
            rows_out=int(rows_out), stage_mix=_mix(decisions), usage=usage,
            thresholds=thresholds, guarantee=guarantee, config=cfg), failure)

    def _binary(self, rows: Sequence[tuple[str, Any]], task: JudgeTask, query_text: str,
                cfg: CascadeConfig, payload: Any, texts: Sequence[str] | None = None,
                vectors: np.ndarray | None = None,
                ) -> tuple[list[Decision], Thresholds, Models, Guarantee | None]:
        """The full cascade for a yes/no question over `rows` (id, text or pair)."""
        models = self._models(cfg)
        if not cfg.embedding or not rows:
            pending = [Pending(i, payload(t)) for i, t in rows]
            return self._resolve(pending, task, models, []), Thresholds(scorer="none"), models, None
        texts = list(texts if texts is not None else [t for _, t in rows])
        if vectors is None:
            vectors = self.embedder.embed(texts)
        ids = [i for i, _ in rows]
        query = self.embedder.embed([query_text])[0]
        if not self._fixed(cfg, "upper", "lower") and models.judge is not None:
            x = proxy.features(texts, vectors, (vectors @ query)[:, None])
            head = Head("", bool, (True, False), lambda v: "accept" if v else "reject")
            decisions, pending, guarantee, _ = self._learned(
                ids, [payload(t) for _, t in rows], x, task, cfg, models, [head])
            decisions.extend(self._resolve(pending, task, models, decisions))
            return decisions, Thresholds(scorer="proxy", calibrated_on=guarantee.trained_on), models, guarantee
        if cfg.upper is None or cfg.lower is None:
            raise SemanticOpError(
                "the embedding stage needs thresholds: set upper and lower, or configure a model "
                "(DIA_SEMANTIC_STRONG_MODEL or DIA_MODEL) to calibrate them on a sample")
        scores = self._scores(ids, vectors, query)
        decisions, pending = _cut(rows, scores, cfg.upper, cfg.lower, payload)
        decisions.extend(self._resolve(pending, task, models, decisions))
        return decisions, Thresholds(upper=cfg.upper, lower=cfg.lower), models, None

    @staticmethod
    def _fixed(cfg: CascadeConfig, *names: str) -> bool:
        """Cut points given by configuration: used as they are, with no guarantee."""
        return all(getattr(cfg, n) is not None for n in names)

    def _learned(self, keys: list[str], payloads: list[Any], x: Any, task: JudgeTask,
                 cfg: CascadeConfig, models: Models, heads: Sequence[Head],
                 ) -> tuple[list[Decision], list[Pending], Guarantee, dict[str, dict[str, Any]]]:
        """Train the proxy on a random sample the judge answers, certify each head's sides
        on held-out rows (`calibrate.certify`), decide the certified rows; the rest are
        pending for the model stages. A row is the proxy's only when every head decided it;
        otherwise the model answers it and the certified heads' values are kept (returned per
        row id for `_merge`), so each side's decided rows are exactly those it was certified on."""
        judge = models.judge
        assert judge is not None
        n = len(keys)
        decisions: dict[int, Decision] = {}
        answers_by_pos: dict[int, Any] = {}

        def ask(positions: list[int]) -> dict[int, Any]:
            got = judge.ask(task, [(keys[p], payloads[p]) for p in positions])
            for p in positions:
                ans = got.get(keys[p])
                if ans is not None:
                    answers_by_pos[p] = ans.value
                    decisions[p] = Decision(id=keys[p], value=ans.value, stage=judge.stage,
                                            confidence=ans.confidence)
            return {p: answers_by_pos[p] for p in positions if p in answers_by_pos}

        train_pos = calibrate.sample_indices(n, cfg.calibration_size, cfg.seed)
        ask(train_pos)
        judged: set[int] = set(train_pos)
        guarantee = Guarantee(target=cfg.target_precision, confidence=cfg.confidence)
        fitted = [p for p in train_pos if p in answers_by_pos]
        guarantee.trained_on = len(fitted)
        per_head: list[dict[int, Any]] = []
        if len(judged) < n and fitted:
            guarantee.proxy = proxy.NAME
            for h_no, head in enumerate(heads):
                model = proxy.train(x[fitted], [head.value_of(answers_by_pos[p]) for p in fitted], cfg.seed)
                if model is None:
                    per_head.append({})
                    continue
                predicted, conf = model.predict(x)

                def ask_head(positions: list[int], head: Head = head) -> dict[int, Any]:
                    return {p: head.value_of(v) for p, v in ask(positions).items()}

                decided, sides = calibrate.certify(
                    predicted, conf, judged, ask_head, target=cfg.target_precision,
                    confidence=cfg.confidence, sample=cfg.certify_sample, steps=cfg.certify_steps,
                    seed=cfg.seed + h_no, side_name=head.side_name, values=head.values)
                guarantee.sides.extend(sides)
                per_head.append({p: (v, float(conf[p])) for p, v in decided.items()})
        guarantee.judged_by_model = len(judged)
        out = list(decisions.values())
        pending: list[Pending] = []
        partial: dict[str, dict[str, Any]] = {}
        for p in range(n):
            if p in decisions:
                continue
            got = [h.get(p) for h in per_head]
            if got and all(g is not None for g in got):
                value = got[0][0] if len(heads) == 1 and not heads[0].name else {
                    head.name: g[0] for head, g in zip(heads, got, strict=True)}
                out.append(Decision(id=keys[p], value=_plain(value), stage="proxy",
                                    score=round(min(g[1] for g in got), 6)))
                continue
            kept = {head.name: _plain(g[0]) for head, g in zip(heads, got, strict=True) if g is not None}
            if kept:
                partial[keys[p]] = kept
            pending.append(Pending(keys[p], payloads[p]))
        # a judged row the model never answered is still pending (retried, else unresolved)
        guarantee.decided_by_proxy = sum(1 for d in out if d.stage == "proxy")
        return out, pending, guarantee, partial

    # ------------------------------------------------------------------ sem_join
    def sem_join(self, left: str, left_column: str, right: str, right_column: str,
                 condition: str, out: str, config: dict[str, Any] | None = None) -> OperatorReport:
        """Pairs (left row, right row) whose texts satisfy `condition`. With the embedding
        stage on, each left row is compared with its `candidates` nearest right rows only."""
        cfg = self._cfg(config, "sem_join")
        quote(out)
        la, ra = f"__sem_l_{uuid.uuid4().hex[:8]}", f"__sem_r_{uuid.uuid4().hex[:8]}"
        lrows = stage_input(self.con, left, left_column, la)
        rrows = stage_input(self.con, right, right_column, ra)
        try:
            rtext = dict(rrows)
            ltext = dict(lrows)
            if cfg.embedding:
                lv = self.embedder.embed([t for _, t in lrows])
                rv = self.embedder.embed([t for _, t in rrows])
                lvec = dict(zip([i for i, _ in lrows], lv, strict=True))
                rvec = dict(zip([i for i, _ in rrows], rv, strict=True))
                collection = f"sem:{uuid.uuid4().hex}"
                self.index.add(collection, [i for i, _ in rrows], rv)
                try:
                    pairs = [(f"{li}|{ri}", s) for (li, _), vec in zip(lrows, lv, strict=True)
                             for ri, s in self.index.search(collection, vec, cfg.candidates)]
                finally:
                    self.index.drop(collection)
            else:
                if len(lrows) * len(rrows) > MAX_UNPRUNED_PAIRS:
                    raise SemanticOpError(
                        f"sem_join without the embedding stage would ask about {len(lrows) * len(rrows)} "
                        f"pairs (limit {MAX_UNPRUNED_PAIRS}); turn the embedding stage on")
                pairs = [(f"{li}|{ri}", 0.0) for li, _ in lrows for ri, _ in rrows]
                lvec = rvec = {}
            pair_rows = [(pid, pid) for pid, _ in pairs]

            def payload(pid: str) -> dict[str, str]:
                li, ri = pid.split("|")
                return {"left": ltext[li], "right": rtext[ri]}

            score_of = dict(pairs)
            def pair_vectors(pids: list[str]) -> tuple[np.ndarray, np.ndarray]:
                split = [p.split("|") for p in pids]
                return (np.stack([lvec[li] for li, _ in split]), np.stack([rvec[ri] for _, ri in split]))

            failure: SemanticModelUnavailable | None = None
            try:
                decisions, thresholds, models, guarantee = self._pairs(
                    pair_rows, score_of, condition, cfg, payload, pair_vectors)
                usage = models.usage()
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, thresholds, usage, failure = _stopped(err, [p for p, _ in pair_rows]), Thresholds(), err.usage, err
                guarantee = None
            write_decisions(self.con, f"{out}__decisions", decisions, ("_left_row", "_right_row"))
            lcols = [c for c in columns_of(self.con, la) if c != "_row"]
            rcols = [c for c in columns_of(self.con, ra) if c != "_row"]
            rsel = ", ".join(f"r.{qcol(c)} AS {qcol('right_' + c if c in lcols else c)}" for c in rcols)
            self.con.execute(
                f"CREATE OR REPLACE TABLE {quote(out)} AS SELECT d._left_row, d._right_row, "
                f"{', '.join('l.' + qcol(c) for c in lcols)}, {rsel}, d._stage, d._score "
                f"FROM {quote(out + '__decisions')} d JOIN {qcol(la)} l ON l._row = d._left_row "
                f"JOIN {qcol(ra)} r ON r._row = d._right_row WHERE d.value = 'true' "
                f"ORDER BY d._left_row, d._right_row")
            rows_out = self.con.execute(f"SELECT count(*) FROM {quote(out)}").fetchone()[0]
        finally:
            drop_temp(self.con, la)
            drop_temp(self.con, ra)
        return _finish(OperatorReport(
            operator="sem_join", source=f"{left},{right}", column=f"{left_column},{right_column}",
            argument=condition, output_table=out, decisions_table=f"{out}__decisions",
            rows_in=len(pair_rows), rows_out=int(rows_out), stage_mix=_mix(decisions),
            usage=usage, thresholds=thresholds, guarantee=guarantee, config=cfg), failure)

    def _pairs(self, pair_rows: list[tuple[str, str]], score_of: dict[str, float], condition: str,
               cfg: CascadeConfig, payload: Any, pair_vectors: Any,
               ) -> tuple[list[Decision], Thresholds, Models, Guarantee | None]:
        """Cascade over candidate pairs: a proxy on pair features certified per side (match,
        no match), or fixed cuts on the pair's cosine similarity."""
        models = self._models(cfg)
        task = JudgeTask("match", condition)
        if not cfg.embedding or not pair_rows:
            pending = [Pending(p, payload(p)) for p, _ in pair_rows]
            return self._resolve(pending, task, models, []), Thresholds(scorer="none"), models, None
        if not self._fixed(cfg, "upper", "lower") and models.judge is not None:
            pids = [p for p, _ in pair_rows]
            x = proxy.pair_features(*pair_vectors(pids))
            head = Head("", bool, (True, False), lambda v: "match" if v else "no match")
            decisions, pending, guarantee, _ = self._learned(
                pids, [payload(p) for p in pids], x, task, cfg, models, [head])
            decisions.extend(self._resolve(pending, task, models, decisions))
            return decisions, Thresholds(scorer="proxy", calibrated_on=guarantee.trained_on), models, guarantee
        if cfg.upper is None or cfg.lower is None:
            raise SemanticOpError("the embedding stage needs thresholds: set upper and lower, or a model")
        decisions, pending = _cut(pair_rows, score_of, cfg.upper, cfg.lower, payload)
        decisions.extend(self._resolve(pending, task, models, decisions))
        return decisions, Thresholds(upper=cfg.upper, lower=cfg.lower), models, None

    # ------------------------------------------------------------------ sem_group
    def sem_group(self, table: str, column: str, out: str, labels: Sequence[str] | None = None,
                  k: int | None = None, instruction: str = "",
                  config: dict[str, Any] | None = None) -> OperatorReport:
        """Every row of `table` with a `_group` label: one of `labels`, or one of `k` groups
        found by clustering the embeddings and named by the model."""
        cfg = self._cfg(config, "sem_group")
        quote(out)
        if not labels and not k:
            raise SemanticOpError("sem_group needs labels or a number of groups k")
        alias = f"__sem_in_{uuid.uuid4().hex[:8]}"
        rows = stage_input(self.con, table, column, alias)
        failure: SemanticModelUnavailable | None = None
        models = self._models(cfg)
        names: list[str] = list(labels or [])
        try:
            try:
                decisions, thresholds, names, guarantee = self._classify(rows, labels, k, instruction, cfg, models)
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, thresholds, failure, guarantee = _stopped(err, [i for i, _ in rows]), Thresholds(), err, None
            write_decisions(self.con, f"{out}__decisions", decisions)
            self.con.execute(
                f"CREATE OR REPLACE TABLE {quote(out)} AS SELECT s.*, d.value AS _group, d._stage, d._score "
                f"FROM {qcol(alias)} s JOIN {quote(out + '__decisions')} d USING (_row) ORDER BY s._row")
        finally:
            drop_temp(self.con, alias)
        return _finish(OperatorReport(
            operator="sem_group", source=table, column=column,
            argument={"labels": list(names), "k": k, "instruction": instruction},
            output_table=out, decisions_table=f"{out}__decisions", rows_in=len(rows),
            rows_out=len(rows), stage_mix=_mix(decisions), usage=models.usage(),
            thresholds=thresholds, guarantee=guarantee, config=cfg), failure)

    def _classify(self, rows: Sequence[tuple[str, str]], labels: Sequence[str] | None, k: int | None,
                  instruction: str, cfg: CascadeConfig, models: Models,
                  ) -> tuple[list[Decision], Thresholds, list[str], Guarantee | None]:
        """Labels per row: the certified proxy (with a model) or nearest label vector."""
        ids = [i for i, _ in rows]
        texts = [t for _, t in rows]
        need_vectors = cfg.embedding or not labels
        vectors = self.embedder.embed(texts) if need_vectors and rows else np.zeros((0, 1), np.float32)
        protos: dict[str, np.ndarray] = {}
        if labels:
            names = list(dict.fromkeys(str(x) for x in labels))
            if need_vectors:
                label_vecs = self.embedder.embed([f"{n}. {instruction}".strip() for n in names])
                protos = dict(zip(names, label_vecs, strict=True))
        else:
            assert k is not None
            centroids, members = kmeans(vectors, k, cfg.seed)
            names = self._name_groups(members, texts, models, instruction)
            protos = dict(zip(names, centroids, strict=True))
        task = JudgeTask("classify", instruction, labels=tuple(names))
        decisions: list[Decision] = []
        thresholds = Thresholds(margin=cfg.margin)
        if not cfg.embedding and labels:
            return self._resolve([Pending(i, t) for i, t in rows], task, models, []), Thresholds(scorer="none"), names, None
        if cfg.margin is None and models.judge is not None and rows:
            sims = np.stack([vectors @ v for v in protos.values()], axis=1)
            x = proxy.features(texts, vectors, sims)
            head = Head("", str, tuple(names))
            decisions, pending, guarantee, _ = self._learned(ids, list(texts), x, task, cfg, models, [head])
            decisions.extend(self._resolve(pending, task, models, decisions))
            return decisions, Thresholds(scorer="proxy", calibrated_on=guarantee.trained_on), names, guarantee
        if cfg.margin is None and labels and rows:
            raise SemanticOpError("the embedding stage needs a margin: set margin, or configure a model")
        # a fixed margin (or k clusters and no model): nearest label or centroid, no guarantee
        per_label = {n: self._scores(ids, vectors, v) for n, v in protos.items()}
        pending: list[Pending] = []
        for i, text in rows:
            top, _second, margin = _top_two({n: per_label[n].get(i, -1.0) for n in per_label})
            trusted = cfg.margin is not None and margin >= cfg.margin
            if trusted or (not labels and models.judge is None):
                decisions.append(Decision(id=i, value=top[0], stage="embedding", score=margin))
            else:
                pending.append(Pending(i, text, margin, top[0]))
        decisions.extend(self._resolve(pending, task, models, decisions))
        return decisions, thresholds, names, None

    def _name_groups(self, members: list[list[int]], texts: Sequence[str], models: Models,
                     instruction: str) -> list[str]:
        """Names for the clusters from the strong (else light) model, from up to five
        members each; `group 1..k` without a model or for a cluster it did not name."""
        names = [f"group {n + 1}" for n in range(len(members))]
        judge = models.judge
        if judge is not None:
            items = [(str(n), [texts[i] for i in m[:5]]) for n, m in enumerate(members)]
            answers = judge.ask(JudgeTask("name_groups", instruction), items)
            for n in range(len(members)):
                if str(n) in answers:
                    names[n] = str(answers[str(n)].value)
        seen: Counter[str] = Counter()
        unique = []
        for n in names:  # the model may give two clusters one name
            seen[n] += 1
            unique.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
        return unique

    # ------------------------------------------------------------------ sem_extract
    def sem_extract(self, table: str, column: str, fields: Sequence[str] | dict[str, Sequence[str] | None],
                    out: str, instruction: str = "", config: dict[str, Any] | None = None) -> OperatorReport:
        """One column per field extracted from `column`. A field with a list of allowed
        values can be decided by the embedding stage (nearest value, calibrated margin);
        free-text fields need a model stage."""
        cfg = self._cfg(config, "sem_extract")
        quote(out)
        spec = {str(f): None for f in fields} if not isinstance(fields, dict) else {
            str(f): (list(v) if v else None) for f, v in fields.items()}
        if not spec:
            raise SemanticOpError("sem_extract needs at least one field")
        alias = f"__sem_in_{uuid.uuid4().hex[:8]}"
        rows = stage_input(self.con, table, column, alias)
        clash = [f for f in spec if f in columns_of(self.con, alias)]
        if clash:
            drop_temp(self.con, alias)
            raise SemanticOpError(f"extracted field names clash with columns of {table!r}: {clash}")
        failure: SemanticModelUnavailable | None = None
        models = self._models(cfg)
        try:
            described = tuple(f if not v else f"{f} (one of: {', '.join(v)})" for f, v in spec.items())
            task = JudgeTask("extract", instruction + (" Field details: " + "; ".join(described)), fields=tuple(spec))
            thresholds = Thresholds(scorer="none")
            decisions: list[Decision] = []
            pending = [Pending(i, t) for i, t in rows]
            guarantee, partial = None, {}
            try:
                if cfg.embedding and all(spec.values()) and rows:
                    decisions, pending, thresholds, guarantee, partial = self._extract_by_embedding(
                        rows, spec, cfg, models, task)
                decisions.extend(_merge(self._resolve(pending, task, models, decisions), partial))
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, failure = _stopped(err, [i for i, _ in rows]), err
            write_decisions(self.con, f"{out}__decisions", decisions)
            extracted = ", ".join(f"json_extract_string(d.value, {_json_path(f)}) AS {qcol(f)}" for f in spec)
            self.con.execute(
                f"CREATE OR REPLACE TABLE {quote(out)} AS SELECT s.*, {extracted}, d._stage, d._score "
                f"FROM {qcol(alias)} s JOIN {quote(out + '__decisions')} d USING (_row) ORDER BY s._row")
        finally:
            drop_temp(self.con, alias)
        return _finish(OperatorReport(
            operator="sem_extract", source=table, column=column, argument={"fields": spec},
            output_table=out, decisions_table=f"{out}__decisions", rows_in=len(rows),
            rows_out=len(rows), stage_mix=_mix(decisions), usage=models.usage(),
            thresholds=thresholds, guarantee=guarantee, config=cfg), failure)

    def _extract_by_embedding(self, rows: Sequence[tuple[str, str]], spec: dict[str, list[str] | None],
                              cfg: CascadeConfig, models: Models, task: JudgeTask,
                              ) -> tuple[list[Decision], list[Pending], Thresholds, Guarantee | None,
                                         dict[str, dict[str, Any]]]:
        """Enumerated fields: with a model, one certified proxy head per field (each value a
        side); with a fixed margin, the nearest allowed value when every field clears it."""
        ids = [i for i, _ in rows]
        texts = [t for _, t in rows]
        vectors = self.embedder.embed(texts)
        value_vecs = {f: self.embedder.embed([f"{f}: {v}" for v in values or []]) for f, values in spec.items()}
        if cfg.margin is None and models.judge is not None:
            x = proxy.features(texts, vectors, np.hstack([vectors @ v.T for v in value_vecs.values()]))
            heads = [Head(f, lambda a, f=f: str(a.get(f)) if isinstance(a, dict) else "None",
                          tuple(values or []), lambda v, f=f: f"{f}={v}") for f, values in spec.items()]
            decisions, pending, guarantee, partial = self._learned(ids, texts, x, task, cfg, models, heads)
            return (decisions, pending, Thresholds(scorer="proxy", calibrated_on=guarantee.trained_on),
                    guarantee, partial)
        decisions: list[Decision] = []
        pending: list[Pending] = []
        for n, (i, text) in enumerate(rows):
            value: dict[str, Any] = {}
            weakest = float("inf")
            for f, values in spec.items():
                sims = dict(zip(values or [], (value_vecs[f] @ vectors[n]).tolist(), strict=True))
                top, _second, margin = _top_two(sims)
                value[f] = top[0]
                weakest = min(weakest, margin - (cfg.margin if cfg.margin is not None else float("inf")))
            if weakest >= 0:
                decisions.append(Decision(id=i, value=value, stage="embedding", score=round(weakest, 6)))
            else:
                pending.append(Pending(i, text, None, value))
        return decisions, pending, Thresholds(margin=cfg.margin), None, {}


@dataclass(frozen=True)
class Head:
    """One thing the proxy decides per row: a field name ("" for the row's whole value),
    how to read the judge's answer into it, the sides to report and their names."""

    name: str
    value_of: Any
    values: tuple[Any, ...] | None = None
    side_name: Any = str


def _plain(value: Any) -> Any:
    """numpy scalars from the classifier as plain Python values."""
    return value.item() if isinstance(value, np.generic) else value


def _cut(rows: Sequence[tuple[str, Any]], scores: dict[str, float], upper: float, lower: float,
         payload: Any) -> tuple[list[Decision], list[Pending]]:
    """Fixed similarity cuts: accept at or above `upper`, reject at or below `lower`; the band
    is pending, with its midpoint guess for runs without a model."""
    decisions: list[Decision] = []
    pending: list[Pending] = []
    mid = (upper + lower) / 2
    for i, item in rows:
        s = scores.get(i)
        if s is not None and s >= upper:
            decisions.append(Decision(id=i, value=True, stage="embedding", score=s))
        elif s is not None and s <= lower:
            decisions.append(Decision(id=i, value=False, stage="embedding", score=s))
        else:
            pending.append(Pending(i, payload(item), s, None if s is None else bool(s >= mid)))
    return decisions, pending


def _merge(decisions: list[Decision], partial: dict[str, dict[str, Any]]) -> list[Decision]:
    """Keep the proxy's certified fields on rows the model answered for the other fields."""
    for d in decisions:
        if d.id in partial and isinstance(d.value, dict):
            d.value = {**d.value, **partial[d.id]}
    return decisions


def _json_path(field_name: str) -> str:
    return "'" + ("$." + json.dumps(field_name)).replace("'", "''") + "'"


def _top_two(scores: dict[str, float]) -> tuple[tuple[str, float], tuple[str, float], float]:
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0]
    second = ranked[1] if len(ranked) > 1 else (top[0], float("-inf"))
    margin = top[1] - second[1] if len(ranked) > 1 else float("inf")
    return top, second, float(margin)


def kmeans(vectors: np.ndarray, k: int, seed: int = 0, rounds: int = 25) -> tuple[list[np.ndarray], list[list[int]]]:
    """Spherical k-means with k-means++ seeding: deterministic for a seed. Members of each
    group come back nearest-first, so the model names a group from its typical rows."""
    n = len(vectors)
    if n == 0:
        return [], []
    k = max(1, min(int(k), n))
    rng = np.random.default_rng(seed)
    centers = [vectors[int(rng.integers(n))]]
    for _ in range(1, k):
        d = 1 - np.max(np.stack([vectors @ c for c in centers]), axis=0)
        d = np.clip(d, 0, None)
        total = float(d.sum())
        centers.append(vectors[int(rng.choice(n, p=d / total)) if total > 0 else int(rng.integers(n))])
    c = np.stack(centers)
    assign = np.zeros(n, dtype=int)
    for _ in range(rounds):
        new = np.argmax(vectors @ c.T, axis=1)
        if _ and np.array_equal(new, assign):
            break
        assign = new
        for j in range(k):
            members = vectors[assign == j]
            if len(members):
                m = members.mean(axis=0)
                c[j] = m / (np.linalg.norm(m) or 1.0)
    sims = vectors @ c.T
    members = [sorted(np.flatnonzero(assign == j).tolist(), key=lambda i, j=j: -sims[i, j]) for j in range(k)]
    keep = [j for j in range(k) if members[j]]
    return [c[j] for j in keep], [members[j] for j in keep]
