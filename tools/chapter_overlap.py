"""Does our text quote the chapter page honestly, and otherwise say things in its own words?

Two checks against the chapter page the collection accompanies:

* **quotations**: a phrase in quotation marks that carries a ``[chapter]`` label (or that the
  sentence attributes to "the chapter" just before it) must be on the page, word for word
  (case, punctuation and spacing aside);
* **shared runs**: no run of :data:`RUN` or more words may be the same as a run on the page,
  except inside such a verified quotation.

The page itself lives outside the repository (``../shared/chapter/``), so the repository keeps a
fingerprint of it: 64-bit hashes of every run of 1 to :data:`RUN` words
(``tests/data/chapter_ngrams.npy``, made by ``--refresh``). That is enough to decide both checks
and holds none of the page's prose. A phrase longer than :data:`RUN` words is on the page when
each of its :data:`RUN`-word runs is.

Usage::

    python tools/chapter_overlap.py notebooks/05_balancing_and_beyond.ipynb   # report
    python tools/chapter_overlap.py --refresh PATH/TO/chapter.txt             # new fingerprint

>>> words("Ranks are NOT equal — 52.4% (P99)")
['ranks', 'are', 'not', 'equal', '52.4', 'p99']
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np

#: Shortest run of shared words that counts as reused prose.
RUN = 8
ROOT = Path(__file__).resolve().parents[1]
FINGERPRINT = ROOT / "tests" / "data" / "chapter_ngrams.npy"
PAGE = ROOT.parent / "shared" / "chapter" / "parallelism-research-when-ranks-are-not-equal.txt"

# A number with its decimals ("272.80", "1,024") is one word, as a reader counts it.
_WORD = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[a-z0-9]+")
# A quotation: straight or curly double quotes around 2-400 characters on one line.
_QUOTE = re.compile(r"[\"“]([^\"“”\n]{2,400})[\"”]")
# What may sit between a closing quote and its label: no other quote, label or sentence end.
_LABEL_AFTER = re.compile(r"[^\"“”\[\n.;]{0,60}\[chapter\]")
# ... or that the sentence hands to the chapter just before it: the chapter's "…", the chapter
# says "…".
_CHAPTER_BEFORE = re.compile(r"\bthe chapter(?:'s|’s| page's| says| writes| calls it| puts it)?"
                             r"[\s:,]*$", re.I)


def words(text: str) -> list:
    """Lower-case runs of letters and digits: the unit both checks compare."""
    return _WORD.findall(text.lower())


def _hash(run) -> int:
    digest = hashlib.blake2b(" ".join(run).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def fingerprint(page_text: str) -> np.ndarray:
    """Sorted unique hashes of every run of 1 to :data:`RUN` words of ``page_text``."""
    w = words(page_text)
    hashes = {_hash(w[i:i + n]) for n in range(1, RUN + 1) for i in range(len(w) - n + 1)}
    return np.array(sorted(hashes), dtype=np.uint64)


def load_fingerprint() -> np.ndarray:
    """The page's fingerprint: from the page when it is here, else the committed one."""
    if PAGE.exists():
        return fingerprint(PAGE.read_text(encoding="utf-8"))
    return np.load(FINGERPRINT)


def _has(fp: np.ndarray, run) -> bool:
    h = np.uint64(_hash(run))
    i = int(np.searchsorted(fp, h))
    return i < len(fp) and fp[i] == h


def on_page(phrase: str, fp: np.ndarray) -> bool:
    """Is ``phrase`` a run of words on the page?"""
    w = words(phrase)
    if not w:
        return True
    if len(w) <= RUN:
        return _has(fp, w)
    return all(_has(fp, w[i:i + RUN]) for i in range(len(w) - RUN + 1))


def quotations(text: str):
    """``(start, end, phrase)`` of every quotation attributed to the chapter in ``text``."""
    for m in _QUOTE.finditer(text):
        labelled = _LABEL_AFTER.match(text, m.end())
        attributed = _CHAPTER_BEFORE.search(text[max(0, m.start() - 40):m.start()])
        if labelled or attributed:
            yield m.start(), m.end(), m.group(1)


def _names() -> tuple:
    """Names a text may repeat as they are: the page's title and the six papers' titles and
    venues (a title is not prose)."""
    sys.path.insert(0, str(ROOT / "lib"))
    from uneven.papers import PAPERS

    return ("Parallelism Research When Ranks Are Not Equal",
            *(p.title for p in PAPERS), *(p.venue for p in PAPERS))


# A name matches whatever punctuation sits between its words ("Parallelism research: when ...").
_NAME = re.compile("|".join(r"\W+".join(map(re.escape, words(n)))
                            for n in sorted(_names(), key=len, reverse=True)), re.I)


def check_text(text: str, fp: np.ndarray) -> tuple:
    """``(misquotes, runs)``: attributed quotations not on the page, and shared runs of
    :data:`RUN` or more words outside verified quotations (each run as its words)."""
    misquotes, masked = [], _NAME.sub(lambda m: " " * len(m.group()), text)
    for start, end, phrase in quotations(masked):
        if on_page(phrase, fp):
            masked = masked[:start] + " " * (end - start) + masked[end:]
        else:
            misquotes.append(phrase)
    # A verified quotation is blanked, so runs cannot cross it.
    runs = []
    for piece in re.split(r"\s{2,}", masked):
        w = words(piece)
        hit = [_has(fp, w[i:i + RUN]) for i in range(len(w) - RUN + 1)]
        i = 0
        while i < len(hit):
            if hit[i]:
                j = i
                while j + 1 < len(hit) and hit[j + 1]:
                    j += 1
                runs.append(" ".join(w[i:j + RUN]))
                i = j + 1
            else:
                i += 1
    return misquotes, runs


def texts(path: Path):
    """``(where, text)`` pieces of a notebook (each cell) or of any other text file."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for k, cell in enumerate(cells):
            yield f"{path.name} cell {k}", "".join(cell.get("source", ""))
    else:
        yield path.name, path.read_text(encoding="utf-8")


def report(paths, fp=None) -> list:
    """One line per problem found in ``paths``."""
    fp = load_fingerprint() if fp is None else fp
    out = []
    for path in map(Path, paths):
        for where, text in texts(path):
            misquotes, runs = check_text(text, fp)
            out += [f"{where}: quoted as the chapter's but not on the page: \"{q}\""
                    for q in misquotes]
            out += [f"{where}: {len(r.split())}-word run shared with the chapter: {r}"
                    for r in runs]
    return out


def main(argv) -> int:
    if argv[:1] == ["--refresh"]:
        page = Path(argv[1]) if len(argv) > 1 else PAGE
        np.save(FINGERPRINT, fingerprint(page.read_text(encoding="utf-8")))
        print(f"wrote {FINGERPRINT.relative_to(ROOT)}")
        return 0
    paths = argv or sorted((ROOT / "notebooks").glob("*.ipynb"))
    lines = report(paths)
    print("\n".join(lines) if lines else "no misquotation, no shared run of 8+ words")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
