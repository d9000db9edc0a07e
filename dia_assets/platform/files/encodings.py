"""Which legacy encoding a text file that is not UTF-8 is in, and how sure that is.

UTF-8 files never come here (the scan made while hashing says so), so the cost falls on the
rare legacy file only, and on a bounded sample of it: the lines with bytes above 127 that do
not decode as UTF-8, from the head and, for a large file, from windows across it.

Every candidate code page decodes the sample; each result is scored as text (`languages.py`):
the letters of one language, at their usual frequencies, make a cheap text (the plain ASCII
words of the sample help choose the language); letters no language uses together, spellings a
language forbids (Polish `ń` before a vowel: cp1250's reading of Spanish `ñ`), control characters, symbols glued inside words, a capital after a small letter
(`ŁódĽ`, `лНЯКБЮ`), a Latin letter inside a Han word or bytes that do not decode make an
expensive one. The costs are negative log-probabilities, so their differences give a posterior
over the candidates; a small margin is reported, never silently taken as certain.

charset-normalizer was measured on the short texts this must get right (a city and a
sentence): restricted to these candidates it chose wrongly for about one file in five
(Turkish as cp1250, Lithuanian as cp1252, a Russian KOI8-R line as cp932), so it is not used
for the decision.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from dia_assets.contracts.interpretation import DeclaredTable
from dia_assets.platform.files.languages import LANGUAGE_PRIOR, LANGUAGES, letter_cost, script

# Candidates in order of preference: of two that decode the sample to the same text, the first
# is named (a superset before its subset, a Windows code page before the ISO one it extends).
CANDIDATES: tuple[str, ...] = (
    "cp1252", "cp1250", "iso-8859-2", "cp1251", "koi8-r", "iso-8859-5", "cp1253", "iso-8859-7",
    "cp1254", "iso-8859-9", "cp1257", "iso-8859-13", "shift_jis", "cp932", "euc-jp", "gb18030",
    "big5", "euc-kr", "cp949", "latin-1",
)
# -ln P(encoding) of a legacy export, roughly: cp1252 is by far the most common, the ISO code
# pages that a Windows one extends are rarer than it. It decides between two equally good
# readings of a lone letter; any real evidence outweighs it.
PRIOR = {"cp1252": 0.0, "latin-1": 0.5, "cp1250": 1.0, "cp1251": 1.0, "gb18030": 1.0, "shift_jis": 1.0,
         "euc-kr": 1.0, "iso-8859-5": 2.0, "iso-8859-9": 2.0, "iso-8859-13": 2.0}
OTHER_PRIOR = 1.5
SWITCH = 3.0  # cost of a word in another language than the file's main one
TEMPERATURE = 1.5  # the costs are overconfident: their features are not independent
UNSURE = 0.9  # a decision below this confidence is reported

HEAD = 1 << 20
WINDOW = 1 << 18
SAMPLE = 1 << 16  # bytes of non-UTF-8 lines scored
MAX_LINE = 4096

ICELANDIC, POLISH = LANGUAGES.index("Icelandic"), LANGUAGES.index("Polish")
# letters and non-ASCII characters (a no-break space too: cp1250 `š` is KOI8-R's); ASCII
# whitespace, punctuation and digits split
TOKEN = re.compile(r"[^ \t\r\n\f\v!-@\[-`{-~]+")
HAN_SPACE_HAN = re.compile(r"[\u4e00-\u9fff] (?=[\u4e00-\u9fff])")
COMMON_MARKS = set("«»„“”‘’‚‹›–—…•·°€£©®™¿¡\u00a0、。「」『』（）【】《》〈〉・ー〜！？，．：；\u3000")
IN_WORD = set("’'‐-·")  # marks that stand between letters of one word (l’homme, l·l)


@dataclass(frozen=True)
class Detection:
    """The chosen encoding, its confidence, and the runner-up that decodes differently."""

    encoding: str
    confidence: float
    runner_up: str | None = None
    runner_up_confidence: float = 0.0
    language: str | None = None  # the language the text reads as
    evidence: int = 0  # non-ASCII characters scored
    undecodable: int = 0  # sampled lines the chosen encoding could not decode
    examples: tuple[str, ...] = ()  # one sampled text as the chosen and the runner-up encoding read it
    declared_in: str | None = None  # the schema file that declares the encoding

    @property
    def uncertain(self) -> bool:
        return self.confidence < UNSURE or self.undecodable > 0


def legacy_encoding(path: Path, declared: DeclaredTable | None = None) -> Detection:
    """The encoding of a file that is not UTF-8: as a schema file beside it declares, else detected."""
    if declared is not None and declared.encoding and not declared.encoding.startswith("utf"):
        return Detection(declared.encoding, 1.0, declared_in=declared.schema_file)
    return detect(path)


def detect(path: Path) -> Detection:
    """The legacy encoding of `path`, judged on a bounded sample of its non-UTF-8 lines."""
    return detect_lines(sample_lines(path, path.stat().st_size))


def sample_lines(path: Path, size: int) -> list[bytes]:
    """Non-UTF-8 lines with non-ASCII bytes from the head and, for a large file, windows across it."""
    windows = [(0, HEAD)]
    if size > 4 * HEAD:
        windows += [(size * k // 4, WINDOW) for k in (1, 2, 3)] + [(size - WINDOW, WINDOW)]
    budget = SAMPLE // len(windows)
    out: list[bytes] = []
    with path.open("rb") as fh:
        for start, length in windows:
            fh.seek(start)
            parts = re.split(rb"[\r\n]+", fh.read(length))
            if start > 0:
                parts = parts[1:]  # the window starts inside a line
            if start + length < size and len(parts) > 1:
                parts = parts[:-1]  # and ends inside one
            taken = 0
            for line in parts:
                if taken >= budget:
                    break
                if line.isascii() or _utf8(line):
                    continue
                line = _cut(line, MAX_LINE)
                out.append(line)
                taken += len(line)
    return out


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _cut(line: bytes, limit: int) -> bytes:
    """A long line cut after a space or ASCII punctuation below '0': no candidate uses those
    bytes inside a multi-byte character, so no character is split."""
    if len(line) <= limit:
        return line
    head = line[:limit]
    at = max(head.rfind(bytes([b])) for b in range(0x20, 0x30))
    return head[: at + 1] if at > 0 else head


def detect_lines(lines: list[bytes]) -> Detection:
    """Score every candidate on `lines` and pick the cheapest decoding."""
    if not lines:
        return Detection("cp1252", 1.0)
    memo: dict[str, tuple[float, np.ndarray]] = {}
    texts: dict[str, str] = {}  # candidate -> its reading; a reading already seen is not scored again
    # the words without accents weigh in on the language (Hungarian is likely only if they look
    # Hungarian too); every reading shares them
    plain = Counter(t for t in TOKEN.findall(b"\n".join(lines).decode("latin-1")) if t.isascii())
    scored: list[tuple[float, str, str, int, int]] = []  # cost, encoding, language, evidence, failures
    for encoding in CANDIDATES:
        text, failures = _decode(lines, encoding)
        if text in texts.values():
            continue
        texts[encoding] = text
        cost, language, evidence = _cost(text, memo, plain)
        cost += 25.0 * failures + PRIOR.get(encoding, OTHER_PRIOR)
        scored.append((cost, encoding, language, evidence, failures))
    scored.sort(key=lambda s: s[0])
    best = scored[0][0]
    weights = [math.exp(-(s[0] - best) / TEMPERATURE) for s in scored]
    total = sum(weights)
    cost, encoding, language, evidence, failures = scored[0]
    runner = scored[1] if len(scored) > 1 else None
    return Detection(
        encoding=encoding, confidence=round(weights[0] / total, 3),
        runner_up=runner[1] if runner else None,
        runner_up_confidence=round(weights[1] / total, 3) if runner else 0.0,
        language=language or None, evidence=evidence, undecodable=failures,
        examples=_difference(texts[encoding], texts[runner[1]]) if runner else (),
    )


def _difference(best: str, other: str, width: int = 40) -> tuple[str, ...]:
    """The first sampled line that the two encodings read differently, as each reads it."""
    for mine, theirs in zip(best.split("\n"), other.split("\n"), strict=False):
        if mine != theirs:
            at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), 0)
            start = max(0, at - width // 2)
            return mine[start:start + width], theirs[start:start + width]
    return ()


def _decode(lines: list[bytes], encoding: str) -> tuple[str, int]:
    out, failures = [], 0
    for line in lines:
        try:
            out.append(line.decode(encoding))
        except UnicodeDecodeError:
            failures += 1
            out.append(line.decode(encoding, errors="replace"))
    return "\n".join(out), failures


def _cost(text: str, memo: dict[str, tuple[float, np.ndarray]], plain: Counter[str]) -> tuple[float, str, int]:
    """Cost of `text` read in its best main language: (cost, language, non-ASCII characters).
    `plain`: the ASCII words of the sample, which choose the language with the others."""
    tokens = Counter(t for t in TOKEN.findall(text) if not t.isascii())
    if not tokens:
        return 0.0, "", 0
    tokens.update(plain)
    structure = 3.0 * len(HAN_SPACE_HAN.findall(text))
    rows, counts, evidence = [], [], 0
    for token, count in tokens.items():
        if token not in memo:
            memo[token] = _token_cost(token)
        shape, letters = memo[token]
        structure += shape * count
        rows.append(letters)
        counts.append(count)
        evidence += count * sum(not ch.isascii() for ch in token)
    matrix = np.array(rows)
    weights = np.array(counts, dtype=float)[:, None]
    # each word in the main language, or in its own best language at a surcharge
    other = (matrix + LANGUAGE_PRIOR).min(axis=1, keepdims=True) + SWITCH
    per_main = (weights * np.minimum(matrix, other)).sum(axis=0) + LANGUAGE_PRIOR
    main = int(per_main.argmin())
    return structure + float(per_main[main]), LANGUAGES[main], evidence


def _token_cost(token: str) -> tuple[float, np.ndarray]:
    """(cost of its shape, cost of its letters under each language) for one token."""
    shape = 0.0
    letters = np.zeros(len(LANGUAGES))
    previous = ""
    for i, ch in enumerate(token):
        kind = _kind(ch)
        if kind == "letter":
            letters += letter_cost(ch)
            letters += _spelling(token, i, ch)
            if previous and _kind(previous) == "letter" and not (ch.isascii() and previous.isascii()):
                if ch.isupper() and previous.islower():
                    shape += 4.0  # a capital after a small letter: ŁódĽ, лНЯКБЮ
                if _group(ch) != _group(previous):
                    shape += 4.0  # two scripts in one word
        elif kind == "junk":
            shape += 25.0
        elif kind != "mark":
            before = i > 0 and _kind(token[i - 1]) == "letter"
            after = i + 1 < len(token) and _kind(token[i + 1]) == "letter"
            if kind == "common":
                shape += 5.0 + (4.0 if before and after and ch not in IN_WORD else 0.0)
            else:
                shape += 9.0 + 2.0 * (before + after)
        previous = ch
    return shape, letters


def _spelling(token: str, i: int, ch: str) -> np.ndarray | float:
    """Spelling rules letter frequencies cannot see, for the readings that code pages confuse
    most: Icelandic starts no word with ð and writes þ first (cp1252 for Turkish ğ, ş); Polish
    writes si, ci, ni, zi before a vowel, never ś, ć, ń, ź (cp1250 for Spanish ñ, French œ)."""
    if ch in "ðÐþÞ" and (i == 0) == (ch in "ðÐ"):
        return _PENALTY[ICELANDIC]
    if ch in "śćńźŚĆŃŹ" and i + 1 < len(token) and token[i + 1].lower() in "aąeęioóuy":
        return _PENALTY[POLISH]
    return 0.0


_PENALTY = np.eye(len(LANGUAGES)) * 6.0


@lru_cache(maxsize=65536)
def _kind(ch: str) -> str:
    """letter, mark (combining), junk (control, unassigned, private, replacement), common
    (usual punctuation) or symbol."""
    category = unicodedata.category(ch)
    if category[0] == "L":
        return "letter"
    if category[0] == "M":
        return "mark"
    if (category in ("Cc", "Cn", "Co", "Cs") and ch not in "\t\r\n") or ch == "\ufffd":
        return "junk"
    return "common" if ch in COMMON_MARKS or ch.isascii() else "symbol"


def _group(ch: str) -> str:
    kind = script(ch)
    return "CJK" if kind in ("HAN", "KANA", "HANGUL") else kind


def codec_name(name: str) -> str:
    """A name people write (`WIN1250`, `1251`, `latin2`, `sjis`) as a Python codec name."""
    import codecs

    raw = name.strip().strip("'\"").lower().replace("_", "-")
    aliases = {"acp": "cp1252", "oem": "cp437", "raw": "latin-1", "65001": "utf-8", "utf8": "utf-8",
               "1200": "utf-16-le", "1201": "utf-16-be", "936": "gb18030", "54936": "gb18030",
               "932": "cp932", "949": "cp949", "950": "big5", "20866": "koi8-r", "28592": "iso-8859-2",
               "28595": "iso-8859-5", "28597": "iso-8859-7", "28599": "iso-8859-9", "28603": "iso-8859-13",
               "51932": "euc-jp", "51949": "euc-kr", "sjis": "shift_jis", "euc-cn": "gb18030", "gbk": "gb18030",
               "win": "cp1251", "alt": "cp866", "latin1": "latin-1", "latin2": "iso-8859-2"}
    if raw in aliases:
        return aliases[raw]
    match = re.fullmatch(r"(?:win(?:dows)?-?|cp|ibm)?(12[5-8]\d|8[5-6]\d|437)", raw)
    if match:
        return f"cp{match.group(1)}"
    match = re.fullmatch(r"koi8-?([ru])", raw)
    if match:
        return f"koi8-{match.group(1)}"
    match = re.fullmatch(r"iso-?8859-?(\d+)", raw)
    if match:
        return f"iso-8859-{match.group(1)}"
    codecs.lookup(raw)  # raises LookupError for an unknown name
    return raw
