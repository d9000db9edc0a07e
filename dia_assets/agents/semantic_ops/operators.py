"""The four semantic operators. Each one: embed the column, search it through the vector
index with the condition (or a calibrated prototype direction), accept above the upper
bound, reject below the lower one, send the band between to the light model, then the
strong model; results and per-row provenance become DuckDB tables.

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

from dia_assets.agents.memory.embedder import Embedder
from dia_assets.agents.semantic_ops import calibrate
from dia_assets.agents.semantic_ops.cascade import Models, Pending, resolve
from dia_assets.agents.semantic_ops.judge import JudgeTask
from dia_assets.agents.semantic_ops.models import (
    CascadeConfig,
    Decision,
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
    """The report, or, after an outage, the partial report raised with the error."""
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
                decisions, thresholds, models = self._binary(
                    rows, JudgeTask("filter", condition), condition, cfg,
                    payload=lambda text: text,
                )
                usage = models.usage()
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, thresholds, usage, failure = _stopped(err, [i for i, _ in rows]), Thresholds(), err.usage, err
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
            thresholds=thresholds, config=cfg), failure)

    def _binary(self, rows: Sequence[tuple[str, Any]], task: JudgeTask, query_text: str,
                cfg: CascadeConfig, payload: Any, texts: Sequence[str] | None = None,
                vectors: np.ndarray | None = None) -> tuple[list[Decision], Thresholds, Models]:
        """The full cascade for a yes/no question over `rows` (id, text or pair)."""
        models = self._models(cfg)
        decisions: list[Decision] = []
        if not cfg.embedding:
            pending = [Pending(i, payload(t)) for i, t in rows]
            return self._resolve(pending, task, models, []), Thresholds(scorer="none"), models
        if vectors is None:
            vectors = self.embedder.embed(list(texts if texts is not None else [t for _, t in rows]))
        ids = [i for i, _ in rows]
        query = self.embedder.embed([query_text])[0]
        thresholds = Thresholds(upper=cfg.upper, lower=cfg.lower)
        judged: dict[str, bool] = {}
        if (cfg.upper is None or cfg.lower is None) and models.judge is not None and rows:
            picks = calibrate.sample_indices(len(rows), cfg.calibration_size, cfg.seed)
            answers = models.judge.ask(task, [(ids[i], payload(rows[i][1])) for i in picks])
            for i in picks:
                ans = answers.get(ids[i])
                if ans is not None:
                    judged[ids[i]] = bool(ans.value)
                    decisions.append(Decision(id=ids[i], value=bool(ans.value), stage=models.judge.stage,
                                              confidence=ans.confidence))
            where = {i: n for n, i in enumerate(ids)}
            pos = [where[i] for i in judged]
            labels = [judged[ids[p]] for p in pos]
            direction = calibrate.prototype_direction(vectors[pos], labels) if pos else None
            if direction is not None:
                query = direction
                sample_scores = calibrate.leave_one_out_scores(vectors[pos], labels)
                thresholds.scorer = "prototype"
            else:
                sample_scores = vectors[pos] @ query if pos else np.zeros(0)
            upper, lower = calibrate.binary_thresholds(sample_scores, labels, cfg.target_precision)
            thresholds.upper = cfg.upper if cfg.upper is not None else upper
            thresholds.lower = cfg.lower if cfg.lower is not None else lower
            thresholds.calibrated_on = len(judged)
        elif (cfg.upper is None or cfg.lower is None) and rows:
            raise SemanticOpError(
                "the embedding stage needs thresholds: set upper and lower, or configure a model "
                "(DIA_SEMANTIC_STRONG_MODEL or DIA_MODEL) to calibrate them on a sample")
        scores = self._scores(ids, vectors, query)
        for d in decisions:  # the judged sample keeps its embedding score for the record
            d.score = scores.get(d.id)
        pending: list[Pending] = []
        upper, lower = thresholds.upper, thresholds.lower
        mid = (upper + lower) / 2 if upper is not None and lower is not None else None
        for i, text in rows:
            if i in judged:
                continue
            s = scores.get(i)
            if s is not None and upper is not None and s >= upper:
                decisions.append(Decision(id=i, value=True, stage="embedding", score=s))
            elif s is not None and lower is not None and s <= lower:
                decisions.append(Decision(id=i, value=False, stage="embedding", score=s))
            else:
                guess = None if (s is None or mid is None) else bool(s >= mid)
                pending.append(Pending(i, payload(text), s, guess))
        decisions.extend(self._resolve(pending, task, models, decisions))
        return decisions, thresholds, models

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
            pair_rows = [(pid, pid) for pid, _ in pairs]

            def payload(pid: str) -> dict[str, str]:
                li, ri = pid.split("|")
                return {"left": ltext[li], "right": rtext[ri]}

            score_of = dict(pairs)
            failure: SemanticModelUnavailable | None = None
            try:
                decisions, thresholds, models = self._pairs(pair_rows, score_of, condition, cfg, payload)
                usage = models.usage()
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, thresholds, usage, failure = _stopped(err, [p for p, _ in pair_rows]), Thresholds(), err.usage, err
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
            usage=usage, thresholds=thresholds, config=cfg), failure)

    def _pairs(self, pair_rows: list[tuple[str, str]], score_of: dict[str, float], condition: str,
               cfg: CascadeConfig, payload: Any) -> tuple[list[Decision], Thresholds, Models]:
        """Cascade over candidate pairs, thresholds on the pair's cosine similarity."""
        models = self._models(cfg)
        task = JudgeTask("match", condition)
        if not cfg.embedding:
            return (self._resolve([Pending(p, payload(p)) for p, _ in pair_rows], task, models, []),
                    Thresholds(scorer="none"), models)
        thresholds = Thresholds(upper=cfg.upper, lower=cfg.lower)
        decisions: list[Decision] = []
        judged: set[str] = set()
        if (cfg.upper is None or cfg.lower is None) and models.judge is not None and pair_rows:
            picks = calibrate.sample_indices(len(pair_rows), cfg.calibration_size, cfg.seed)
            ids = [pair_rows[i][0] for i in picks]
            answers = models.judge.ask(task, [(p, payload(p)) for p in ids])
            labels, scores = [], []
            for p in ids:
                if p in answers:
                    judged.add(p)
                    labels.append(bool(answers[p].value))
                    scores.append(score_of[p])
                    decisions.append(Decision(id=p, value=bool(answers[p].value), stage=models.judge.stage,
                                              score=score_of[p], confidence=answers[p].confidence))
            upper, lower = calibrate.binary_thresholds(scores, labels, cfg.target_precision)
            thresholds.upper = cfg.upper if cfg.upper is not None else upper
            thresholds.lower = cfg.lower if cfg.lower is not None else lower
            thresholds.calibrated_on = len(judged)
        elif (cfg.upper is None or cfg.lower is None) and pair_rows:
            raise SemanticOpError("the embedding stage needs thresholds: set upper and lower, or a model")
        upper, lower = thresholds.upper, thresholds.lower
        mid = (upper + lower) / 2 if upper is not None and lower is not None else None
        pending: list[Pending] = []
        for p, _ in pair_rows:
            if p in judged:
                continue
            s = score_of[p]
            if upper is not None and s >= upper:
                decisions.append(Decision(id=p, value=True, stage="embedding", score=s))
            elif lower is not None and s <= lower:
                decisions.append(Decision(id=p, value=False, stage="embedding", score=s))
            else:
                pending.append(Pending(p, payload(p), s, None if mid is None else bool(s >= mid)))
        decisions.extend(self._resolve(pending, task, models, decisions))
        return decisions, thresholds, models

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
                decisions, thresholds, names = self._classify(rows, labels, k, instruction, cfg, models)
            except SemanticModelUnavailable as err:  # keep and mark what was decided
                decisions, thresholds, failure = _stopped(err, [i for i, _ in rows]), Thresholds(), err
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
            thresholds=thresholds, config=cfg), failure)

    def _classify(self, rows: Sequence[tuple[str, str]], labels: Sequence[str] | None, k: int | None,
                  instruction: str, cfg: CascadeConfig, models: Models,
                  ) -> tuple[list[Decision], Thresholds, list[str]]:
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
            return self._resolve([Pending(i, t) for i, t in rows], task, models, []), Thresholds(scorer="none"), names
        judged: dict[str, str] = {}
        if cfg.margin is None and models.judge is not None and rows:
            picks = calibrate.sample_indices(len(rows), cfg.calibration_size, cfg.seed)
            answers = models.judge.ask(task, [(ids[i], texts[i]) for i in picks])
            judged = {ids[i]: answers[ids[i]].value for i in picks if ids[i] in answers}
            for i in picks:
                if ids[i] in answers:
                    decisions.append(Decision(id=ids[i], value=answers[ids[i]].value,
                                              stage=models.judge.stage, confidence=answers[ids[i]].confidence))
            where = {i: n for n, i in enumerate(ids)}
            pos = [where[i] for i in judged]
            learned = calibrate.class_prototypes(vectors[pos], [judged[ids[p]] for p in pos], names)
            if labels and learned:
                protos.update(learned)
                thresholds.scorer = "prototype"
            margins, correct = [], []
            for p in pos:
                top, second, _ = _top_two(self._label_scores_one(vectors[p], protos))
                margins.append(top[1] - second[1])
                correct.append(top[0] == judged[ids[p]])
            thresholds.margin = calibrate.margin_threshold(margins, correct, cfg.target_precision)
            thresholds.calibrated_on = len(judged)
        elif cfg.margin is None and labels and rows:
            raise SemanticOpError("the embedding stage needs a margin: set margin, or configure a model")
        per_label = {n: self._scores(ids, vectors, v) for n, v in protos.items()}
        pending: list[Pending] = []
        for i, text in rows:
            s = {n: per_label[n].get(i, -1.0) for n in per_label}
            top, second, margin = _top_two(s)
            if i in judged:
                continue
            trusted = thresholds.margin is not None and margin >= thresholds.margin
            if trusted or (not labels and models.judge is None):
                decisions.append(Decision(id=i, value=top[0], stage="embedding", score=margin))
            else:
                pending.append(Pending(i, text, margin, top[0]))
        decisions.extend(self._resolve(pending, task, models, decisions))
        return decisions, thresholds, names

    @staticmethod
    def _label_scores_one(vector: np.ndarray, protos: dict[str, np.ndarray]) -> dict[str, float]:
        return {n: float(vector @ v) for n, v in protos.items()}

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
            try:
                if cfg.embedding and all(spec.values()):
                    decisions, pending, thresholds = self._extract_by_embedding(rows, spec, cfg, models, task)
                decisions.extend(self._resolve(pending, task, models, decisions))
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
            thresholds=thresholds, config=cfg), failure)

    def _extract_by_embedding(self, rows: Sequence[tuple[str, str]], spec: dict[str, list[str] | None],
                              cfg: CascadeConfig, models: Models, task: JudgeTask,
                              ) -> tuple[list[Decision], list[Pending], Thresholds]:
        """Enumerated fields: per field, nearest allowed value by embedding; a row is decided
        when every field's margin clears that field's calibrated margin."""
        ids = [i for i, _ in rows]
        texts = [t for _, t in rows]
        vectors = self.embedder.embed(texts)
        decisions: list[Decision] = []
        judged: dict[str, dict[str, Any]] = {}
        if models.judge is not None and rows and cfg.margin is None:
            picks = calibrate.sample_indices(len(rows), cfg.calibration_size, cfg.seed)
            answers = models.judge.ask(task, [(ids[i], texts[i]) for i in picks])
            for i in picks:
                if ids[i] in answers:
                    judged[ids[i]] = answers[ids[i]].value
                    decisions.append(Decision(id=ids[i], value=answers[ids[i]].value,
                                              stage=models.judge.stage, confidence=answers[ids[i]].confidence))
        margins: dict[str, float | None] = {}
        field_scores: dict[str, dict[str, dict[str, float]]] = {}
        for f, values in spec.items():
            assert values
            protos = dict(zip(values, self.embedder.embed([f"{f}: {v}" for v in values]), strict=True))
            where = {i: n for n, i in enumerate(ids)}
            pos = [where[i] for i in judged]
            learned = calibrate.class_prototypes(vectors[pos], [str(judged[ids[p]].get(f)) for p in pos], values)
            protos.update(learned)
            if cfg.margin is not None:
                margins[f] = cfg.margin
            elif pos:
                ms, ok = [], []
                for p in pos:
                    top, second, _ = _top_two(self._label_scores_one(vectors[p], protos))
                    ms.append(top[1] - second[1])
                    ok.append(top[0] == str(judged[ids[p]].get(f)))
                margins[f] = calibrate.margin_threshold(ms, ok, cfg.target_precision)
            else:
                margins[f] = None
            per_value = {v: self._scores(ids, vectors, q) for v, q in protos.items()}
            field_scores[f] = {i: {v: per_value[v][i] for v in per_value} for i in ids}
        pending: list[Pending] = []
        for i, text in rows:
            if i in judged:
                continue
            value: dict[str, Any] = {}
            weakest = float("inf")
            for f in spec:
                top, _second, margin = _top_two(field_scores[f][i])
                value[f] = top[0]
                need = margins[f]
                weakest = min(weakest, margin - (need if need is not None else float("inf")))
            if weakest >= 0:
                decisions.append(Decision(id=i, value=value, stage="embedding", score=round(weakest, 6)))
            else:
                pending.append(Pending(i, text, None, value))
        shown = [m for m in margins.values() if m is not None]
        thresholds = Thresholds(margin=max(shown) if shown else None, calibrated_on=len(judged),
                                scorer="prototype" if judged else "similarity")
        return decisions, pending, thresholds


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
