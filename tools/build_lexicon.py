"""Write the catalog's English lexicon (`dia_assets/agents/catalog/data/lexicon.tsv.gz`) from a
WordNet 3.0 database folder (Debian's `wordnet-base`: /usr/share/wordnet).

The catalog links a question's words to a column's name words through WordNet's synonyms,
hypernyms, derivations and similar adjectives (see `agents/catalog/lexicon.py`); the package
ships this compact extract so that nothing outside the package is read at run time.

Lines (tab-separated):
    S  <synset>  <lemma> <lemma> ...  <related synset> ...   one synset; lemmas lower case
    W  <pos>  <lemma>  <synset> ...                          a lemma's synsets, most frequent first
    X  <pos>  <inflected form>  <base form>                  WordNet's morphological exceptions

Run:  python tools/build_lexicon.py [/usr/share/wordnet]
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "dia_assets" / "agents" / "catalog" / "data" / "lexicon.tsv.gz"
POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
# WordNet pointers kept: hypernym, instance hypernym, derivationally related form,
# similar to (adjectives), attribute (adjective <-> noun), pertainym, participle of a verb
KEEP = {"@", "@i", "+", "&", "=", "\\", "<"}


def main(src: Path) -> None:
    ids: dict[tuple[str, str], int] = {}
    synsets: list[tuple[list[str], list[tuple[str, str]]]] = []
    for name, pos in POS.items():
        for line in (src / f"data.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            f = line.split("|", 1)[0].split()
            offset, n_words = f[0], int(f[3], 16)
            words = [f[4 + 2 * i].lower() for i in range(n_words)]
            words = [w.split("(", 1)[0] for w in words]  # adjective markers: `galore(ip)`
            i = 4 + 2 * n_words
            n_ptr = int(f[i])
            rel = [(f[i + 2 + 4 * p], f[i + 3 + 4 * p]) for p in range(n_ptr) if f[i + 1 + 4 * p] in KEEP]
            ids[(pos, offset)] = len(synsets)
            synsets.append((list(dict.fromkeys(words)), rel))
    norm = {"s": "a"}
    lines = []
    for k, (words, rel) in enumerate(synsets):
        targets = sorted({ids[(norm.get(p, p), o)] for o, p in rel if (norm.get(p, p), o) in ids})
        lines.append(f"S\t{k}\t{' '.join(words)}\t{' '.join(map(str, targets))}")
    for name, pos in POS.items():
        for line in (src / f"index.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            f = line.split()
            n_syn, n_ptr = int(f[2]), int(f[3])
            offsets = f[6 + n_ptr: 6 + n_ptr + n_syn]
            lines.append(f"W\t{pos}\t{f[0].lower()}\t{' '.join(str(ids[(pos, o)]) for o in offsets)}")
        for line in (src / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            f = line.split()
            if len(f) >= 2:
                lines.append(f"X\t{pos}\t{f[0]}\t{f[1]}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUT, "wt", encoding="utf-8", compresslevel=9) as out:
        out.write("\n".join(lines) + "\n")
    print(f"{OUT}: {len(synsets)} synsets, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"))
