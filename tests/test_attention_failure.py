"""Lab 07's honest failure: "The animal didn't cross the street because it was
too wide". The designed coreference head's wrong answer is a build-checked claim in lab.yaml; what
the note says about MiniLM is checked here against the committed cache (real-heads.json), so a
refreshed cache that changes the numbers fails this test rather than leaving the text wrong."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from generator.kinds.attention import realheads, teaching
from generator.kinds.attention import cache as cachefile

LAB = Path(__file__).resolve().parent.parent / "content" / "labs" / "attention"
WIDE = "The animal didn't cross the street because it was too wide"
TIRED = "The animal didn't cross the street because it was too tired"


@pytest.fixture(scope="module")
def lab() -> dict:
    return yaml.safe_load((LAB / "lab.yaml").read_text(encoding="utf-8"))


def _sentence(lab: dict, sid: str) -> dict:
    return next(s for s in lab["widget"]["sentences"] if s["id"] == sid)


def _strongest(text: str) -> dict[str, int]:
    """How many of the model's heads give "it" its strongest weight on each word — the head
    finder's rule (pair_outcomes): [CLS], [SEP] and "it" itself left out, ties to the lower index."""
    cache = cachefile.load_cache(LAB / "real-heads.json")
    (sha,) = cache["entries"]
    entry = cachefile.cache_lookup(cache, sha, text)
    assert entry is not None, f"{text!r} is not cached: run labs heads --model DIR"
    words = entry["words"]
    it = words.index("it")
    counts = {}
    for target in ("animal", "street"):
        hits, _ = realheads.pair_outcomes(np.asarray(entry["attention"]), [it], [words.index(target)], entry["special"])
        counts[target] = int(hits.sum())
    counts["heads"] = int(np.asarray(entry["attention"]).shape[0] * np.asarray(entry["attention"]).shape[1])
    return counts


def test_the_note_says_what_the_cached_model_shows(lab):
    note = " ".join(_sentence(lab, "animal-wide")["note"].split())
    wide, tired = _strongest(WIDE), _strongest(TIRED)
    said = re.search(r"of its (\d+) heads, (\d+) put the strongest weight of \"it\" on \"animal\" and (\d+) on "
                     r"\"street\", nearly the same as for \"too tired\" \((\d+) and (\d+)\)", note)
    assert said, note
    assert [int(x) for x in said.groups()] == [wide["heads"], wide["animal"], wide["street"],
                                               tired["animal"], tired["street"]]
    # "does not tell the two apart": more heads still favour the wrong noun, and the split barely moves.
    assert wide["animal"] > wide["street"]
    assert abs((wide["animal"] - wide["street"]) - (tired["animal"] - tired["street"])) <= 2


def test_the_designed_head_gets_it_wrong_and_the_build_checks_it(lab):
    wide = _sentence(lab, "animal-wide")
    assert "it -> animal" in wide["claims"]["coreference"]  # checked at build (widget.check_claims)
    assert "wrong" in wide["note"] and '"it" is the street' in wide["note"]
    # The head gives the same answer whatever the adjective: it reads grammar, not meaning.
    for text in (wide["text"], _sentence(lab, "animal")["text"]):
        words = teaching.parse_sentence(text)
        result = teaching.compute(words, heads=("coreference",))["coreference"]
        it = [w.text for w in words].index("it")
        assert [w.text for w in words][int(np.argmax(result.weights[it]))] == "animal", text


def test_the_notes_cls_count_is_the_cached_models(lab):
    """"with [CLS] counted, 52 heads put it on [CLS]": the heads whose largest weight in the whole
    row of "it" is on [CLS]."""
    note = " ".join(_sentence(lab, "animal-wide")["note"].split())
    said = re.search(r"with \[CLS\] counted, (\d+) heads put it on \[CLS\]", note)
    assert said, note
    cache = cachefile.load_cache(LAB / "real-heads.json")
    (sha,) = cache["entries"]
    entry = cachefile.cache_lookup(cache, sha, WIDE)
    rows = np.asarray(entry["attention"])[:, :, entry["words"].index("it"), :]
    assert int(said.group(1)) == int((rows.argmax(axis=-1) == entry["words"].index("[CLS]")).sum())
