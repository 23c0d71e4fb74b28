"""Facts carry over from the chapter page, its sentences do not; its quotations are real.

Every notebook, the README and the library's text (what notebooks print) are read against the
chapter page's fingerprint (tools/chapter_overlap.py): a phrase quoted as the chapter's must be on
the page, and no run of 8 or more words may be the page's, outside such a quotation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import chapter_overlap as co  # noqa: E402

PAGE = ("Balancing and Beyond sends one copy per remote host through the same-index GPU, "
        "which keeps the traffic on its rail. A hot expert sets the pace of the layer.")


@pytest.fixture(scope="module")
def fp():
    return co.fingerprint(PAGE)


def test_a_quotation_on_the_page_is_accepted_and_masked(fp):
    text = ('The relay sends "one copy per remote host through the same-index GPU, which keeps '
            'the traffic on its rail" [chapter].')
    assert co.check_text(text, fp) == ([], [])


def test_a_quotation_the_page_does_not_have_is_flagged(fp):
    misquotes, _ = co.check_text('That is the chapter\'s "balance per NIC, not per GPU".', fp)
    assert misquotes == ["balance per NIC, not per GPU"]
    misquotes, _ = co.check_text('The relay "stays on one leaf switch" [chapter].', fp)
    assert misquotes == ["stays on one leaf switch"]


def test_an_unquoted_run_of_eight_words_is_flagged_and_seven_is_not(fp):
    eight = "Our relay sends one copy per remote host through the same rail."
    seven = "Our relay sends one copy per remote host, then it waits."
    assert co.check_text(eight, fp)[1] == ["sends one copy per remote host through the same"]
    assert co.check_text(seven, fp) == ([], [])


def test_an_unlabelled_quotation_still_counts_as_prose(fp):
    # Quotation marks alone do not excuse a copied sentence: it needs the chapter's label.
    text = 'The model "sends one copy per remote host through the same-index GPU" here.'
    assert co.check_text(text, fp)[1]


def test_titles_are_names_not_prose():
    fp = co.fingerprint("Parallelism Research: When Ranks Are Not Equal, a book page.")
    assert co.check_text("the page *Parallelism research: when ranks are not equal*.", fp) \
        == ([], [])


def test_the_committed_fingerprint_is_the_pages():
    if not co.PAGE.exists():
        pytest.skip("the chapter page is not beside this checkout")
    assert np.array_equal(np.load(co.FINGERPRINT),
                          co.fingerprint(co.PAGE.read_text(encoding="utf-8")))


def _ours():
    files = sorted((ROOT / "notebooks").glob("*.ipynb")) + [ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "lib" / "uneven").rglob("*.py"))
    return files


@pytest.mark.parametrize("path", _ours(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_misquotation_and_no_shared_run_of_eight_words(path):
    problems = co.report([path], np.load(co.FINGERPRINT))
    assert not problems, "\n".join(problems)
