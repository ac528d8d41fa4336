"""The sampling kind: its NumPy (softmax with temperature, top-k, top-p, the seeded sampler), the
page script's copy of that arithmetic (run in Node), reading lab.yaml and quiz.yaml with
positioned errors, and whole builds of a fixture site and of content/.

Run: ``python -m pytest tests/test_sampling.py -q``
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import lab_data
from hypothesis import given, settings
from hypothesis import strategies as st

import generator.kinds as kinds
from generator.build import build_files
from generator.errors import ContentError
from generator.models import decoding
from generator.kinds.sampling import SamplingKind, dial_figure, evaluate, share_figure
from generator.kinds.sampling.reading import Condition

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "sampling" / "content"
CORE_JS = ROOT / "generator" / "kinds" / "sampling" / "static" / "10-core.js"


def test_the_kind_is_registered_through_its_entry_point():
    assert "sampling" in kinds.kind_names()
    assert kinds.get_kind("sampling").name == "sampling"


# -- the NumPy --------------------------------------------------------------------------------------
LOGITS = np.array([4.1, 3.2, 2.9, 2.4, 1.5, -0.5])


def test_softmax_rows_sum_to_one_and_are_positive():
    p = decoding.softmax(LOGITS, [0.1, 0.5, 1, 2, 10])
    assert p.shape == (5, 6)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-12)
    assert (p >= 0).all()


def test_softmax_at_t1_is_the_plain_softmax():
    e = np.exp(LOGITS)
    np.testing.assert_allclose(decoding.softmax(LOGITS, [1.0])[0], e / e.sum(), rtol=1e-12)


def test_low_temperature_approaches_argmax_and_high_approaches_uniform():
    cold, hot = decoding.softmax(LOGITS, [0.01, 1000.0])
    assert cold[np.argmax(LOGITS)] > 1 - 1e-12
    np.testing.assert_allclose(hot, 1 / len(LOGITS), atol=1e-3)


def test_softmax_survives_huge_logits_and_tiny_temperatures():
    p = decoding.softmax([100.0, -100.0, 99.0], [0.01])[0]
    assert np.isfinite(p).all() and p[0] == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=2, max_size=12), st.floats(0.01, 100))
def test_temperature_never_changes_the_ranking(logits, t):
    p = decoding.softmax(logits, [t])[0]
    for i in range(len(logits)):
        for j in range(len(logits)):
            if logits[i] > logits[j]:
                assert p[i] >= p[j]
    np.testing.assert_allclose(p.sum(), 1.0, atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=12), st.integers(0, 100_000))
def test_largest_remainder_adds_up_exactly(values, total):
    out = decoding.largest_remainder(values, total)
    assert (out >= 0).all()
    assert int(out.sum()) == (total if sum(values) > 0 else 0)
    if sum(values) > 0:  # each share is its exact value rounded down or up
        exact = np.array(values) / sum(values) * total
        assert (np.abs(out - exact) < 1 + 1e-6).all()


def _by_sorting(values, total):  # the rule as written: floor, then a stable sort of the remainders
    x = np.asarray(values, dtype=np.float64)
    whole = x.sum(axis=-1, keepdims=True)
    raw = np.divide(x * total, whole, out=np.zeros_like(x), where=whole > 0)
    out = np.floor(raw).astype(np.int64)
    left = np.where(whole[..., 0] > 0, total - out.sum(axis=-1), 0)
    order = np.argsort(-(raw - out), axis=-1, kind="stable")
    bonus = (np.arange(x.shape[-1]) < left[..., None]).astype(np.int64)
    np.put_along_axis(out, order, np.take_along_axis(out, order, axis=-1) + bonus, axis=-1)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 7), min_size=5, max_size=5), min_size=1, max_size=4),
       st.integers(0, 1000), st.sampled_from([1.0, 3.0, 1e-3]))
def test_largest_remainder_gives_the_units_as_a_stable_sort_of_the_remainders_would(rows, total, scale):
    """The units left after the floors go to the largest remainders, found without sorting the
    row: the same integers as sorting it, ties (small integers make many) to the lower index."""
    values = np.asarray(rows, dtype=np.float64) * scale  # [r, 5]
    assert decoding.largest_remainder(values, total).tolist() == _by_sorting(values, total).tolist()
    assert decoding.largest_remainder(values[0], total).tolist() == _by_sorting(values[0], total).tolist()


def test_largest_remainder_ties_go_to_the_lower_index():
    assert decoding.largest_remainder([1, 1, 1], 100).tolist() == [34, 33, 33]
    assert decoding.to_parts([[0.5, 0.5], [1.0, 0.0]]).tolist() == [[50000, 50000], [100000, 0]]


def test_top_k_keeps_exactly_the_k_most_likely():
    w = [10, 40, 30, 20]
    assert decoding.top_k_keep(w, 2).tolist() == [False, True, True, False]
    assert decoding.top_k_keep(w, 0).all() and decoding.top_k_keep(w, 4).all()
    assert decoding.top_k_keep([5, 5, 5], 2).tolist() == [True, True, False]  # ties: lower index


def test_top_p_keeps_the_smallest_set_reaching_p():
    w = [10, 40, 30, 20]  # ranked: 40, 30, 20, 10 — running totals 40, 70, 90, 100
    assert decoding.top_p_keep(w, 40).tolist() == [False, True, False, False]  # 40 reaches 40
    assert decoding.top_p_keep(w, 41).tolist() == [False, True, True, False]
    assert decoding.top_p_keep(w, 70).tolist() == [False, True, True, False]
    assert decoding.top_p_keep(w, 71).tolist() == [False, True, True, True]
    assert decoding.top_p_keep(w, 1).tolist() == [False, True, False, False]  # the top word always stays
    assert decoding.top_p_keep(w, 100).all()
    with pytest.raises(ValueError):
        decoding.top_p_keep(w, 0)


def test_cut_applies_top_k_then_top_p_to_what_is_left():
    w = [10, 40, 30, 20]
    assert decoding.cut(w, k=3).tolist() == [0, 40, 30, 20]
    # top-p 60 on the top-3 (total 90): 40 < 54, 70 >= 54 — keeps 40 and 30
    assert decoding.cut(w, k=3, p_percent=60).tolist() == [0, 40, 30, 0]
    assert decoding.shares(decoding.cut(w, k=2)).tolist() == [0, 57, 43, 0]


def test_mulberry32_matches_the_reference_javascript():
    # From the JavaScript in 10-core.js (and the widely published mulberry32), seed 42.
    assert decoding.mulberry32(42, 3).tolist() == [2581720956, 1925393290, 3661312704]
    assert decoding.mulberry32(0, 1).tolist() == decoding.mulberry32(2**32, 1).tolist()


def test_draw_is_deterministic_and_never_draws_a_cut_word():
    w = decoding.cut(decoding.to_parts(decoding.softmax(LOGITS, [1.0]))[0], k=3)
    a, b = decoding.draw(w, 7, 500), decoding.draw(w, 7, 500)
    assert a.tolist() == b.tolist()
    assert set(a.tolist()) <= {0, 1, 2}
    assert decoding.draw(w, 8, 50).tolist() != a[:50].tolist()
    with pytest.raises(ValueError):
        decoding.draw([0, 0], 1, 1)


def test_draws_follow_the_probabilities():
    w = decoding.to_parts(decoding.softmax(LOGITS, [1.5]))[0]
    n = 200_000
    counts = np.bincount(decoding.draw(w, 2024, n), minlength=len(w))
    expected = w / w.sum() * n
    chi2 = float((((counts - expected) ** 2) / expected).sum())
    assert chi2 < 25  # 5 degrees of freedom: p < 0.0002 for a fair sampler to exceed it
    np.testing.assert_allclose(counts / n, w / w.sum(), atol=0.005)


# -- the page's copy of the arithmetic, run in Node ---------------------------------------------------
def test_the_page_script_computes_what_python_computes():
    if shutil.which("node") is None:  # scripts/setup-tests installs it; CI must not skip this
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail("LABS_REQUIRE_REFERENCE=1 but Node.js is not installed (scripts/setup-tests installs it)")
        pytest.skip("needs Node.js to run the page's script (scripts/setup-tests installs it)")
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(200):
        n = int(rng.integers(2, 13))
        logits = rng.normal(0, 3, n).round(2)
        t = float(rng.choice([0.1, 0.5, 1, 2, 3]))
        w = decoding.to_parts(decoding.softmax(logits, [t]))[0].tolist()
        cases.append({"w": w, "k": int(rng.integers(0, n + 1)), "p": int(rng.integers(1, 101)),
                      "seed": int(rng.integers(0, 2**32))})
    script = CORE_JS.read_text() + """
const S = globalThis.Labs.code.sampling, cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map(c => {
  const kept = S.cut(c.w, c.k, c.p), g = S.mulberry32(c.seed), draws = [];
  for (let i = 0; i < 20; i++) draws.push(S.draw(kept, g()));
  return { k: S.topK(c.w, c.k), p: S.topP(c.w, c.p), kept, draws };
})));"""
    out = subprocess.run(["node", "-e", script], input=json.dumps(cases), capture_output=True, text=True,
                         check=True, timeout=60)
    for case, js in zip(cases, json.loads(out.stdout)):
        w, k, p = np.array(case["w"]), case["k"], case["p"]
        assert js["k"] == decoding.top_k_keep(w, k).tolist()
        assert js["p"] == decoding.top_p_keep(w, p).tolist()
        kept = decoding.cut(w, k, p)
        assert js["kept"] == kept.tolist()
        assert js["draws"] == decoding.draw(kept, case["seed"], 20).tolist()


# -- reading and validation ---------------------------------------------------------------------------
def _site(tmp_path: Path, lab_yaml: str | None = None, quiz_yaml: str | None = None) -> Path:
    root = tmp_path / "content"
    shutil.copytree(FIXTURE, root)
    lab = root / "labs" / "dial"
    if lab_yaml is not None:
        (lab / "lab.yaml").write_text(lab_yaml)
    if quiz_yaml is not None:
        (lab / "quiz.yaml").write_text(quiz_yaml)
    return root


def _lab_text(old: str, new: str) -> str:
    text = (FIXTURE / "labs" / "dial" / "lab.yaml").read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _quiz_text(old: str, new: str) -> str:
    text = (FIXTURE / "labs" / "dial" / "quiz.yaml").read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _at(text: str, needle: str, nth: int = 1) -> str:
    """``line:col`` of the nth ``needle`` in ``text``."""
    index = -1
    for _ in range(nth):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    return f"{line}:{index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def _errors(root: Path) -> list[str]:
    with pytest.raises(ContentError) as info:
        build_files(root, None)
    return [str(d) for d in info.value.diagnostics]


LAB = "content/labs/dial/lab.yaml"
QUIZ = "content/labs/dial/quiz.yaml"


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paths print relative to the cwd: content/labs/…
    return tmp_path


def test_the_fixture_builds(in_tmp):
    files, content = build_files(_site(in_tmp), None)
    page = files["labs/dial/index.html"].decode()
    data = lab_data(page)
    assert data["temps"] == [0.5, 1.0, 1.5, 2.0]
    assert data["default"] == {"context": "cat", "t": 1}
    assert data["seed"] == 7 and data["parts"] == 100_000
    cat = data["contexts"][0]
    assert cat["words"] == ["mat", "sofa", "floor", "moon"]
    assert all(sum(row) == 100_000 for row in cat["p"])
    assert len(json.dumps(data)) < 2000
    # the dial questions: buttons the generic quiz grades, right ones computed from the grid
    assert re.findall(r'data-option="(sharp-t\d)"( data-correct)?', page) == [
        ("sharp-t0", " data-correct"), ("sharp-t1", ""), ("sharp-t2", "")]
    assert '<fieldset class="quiz-q" id="quiz-flat" data-type="dial" data-match="any">' in page
    assert "Mat gets 58%." in page  # the figure the dial shows at T = 1 (58.21% unrounded)
    # without JavaScript: the default distribution as a table
    assert "<tr><th scope=\"row\">mat</th><td>58%</td></tr>" in page
    assert any(name.startswith("assets/kind-sampling.") and name.endswith(".js") for name in files)
    lab = content.labs[0]
    assert [q.match for q in lab.quiz.questions] == ["all", "any", "all"]


@pytest.mark.parametrize("old, new, needle, message", [
    ("  seed: 7\n", "  seed: 7\n  sed: 3\n", "sed:", "unknown key 'sed' (did you mean 'seed'?)"),
    ("{min: 0.5, max: 2, step: 0.5}", "{min: 0, max: 2, step: 0.5}", "0, max",
     "the lowest temperature must be at least 0.01 (T = 0 is greedy decoding, the limit the dial approaches), not 0"),
    ("{min: 0.5, max: 2, step: 0.5}", "{min: 0.5, max: 2.2, step: 0.5}", "2.2",
     "'max' must be 'min' plus a whole number of steps: 0.5 + 3.40 × 0.5 = 2.2"),
    ("{min: 0.5, max: 2, step: 0.5}", "{min: 0.01, max: 2, step: 0.01}", "0.01}",
     "the grid has 200 temperatures; at most 100 fit on the page: use a larger step"),
    ("temperature: 1}", "temperature: 1.2}", "1.2}",
     "T = 1.2 is not on the dial: its grid runs from 0.5 to 2 in steps of 0.5 (nearest: 1, 1.5)"),
    ("moon: -0.5", "moon: .nan", ".nan", "the logit of 'moon' must be a finite number, not '.nan'"),
    ("moon: -0.5", "moon: high", "high", "the logit of 'moon' must be a number, not text"),
    ("moon: -0.5", "moon: -500", "-500", "the logit of 'moon' must be between −100 and 100, not -500"),
    ("{word: green, logit: 1.9}", "{word: blue, logit: 1.9}", "blue, logit: 1.9", "duplicate word 'blue'"),
    ("- at T=0.5: mat >= 75%", "- at T=0.5: mta >= 75%", "mta",
     "unknown word 'mta' (did you mean 'mat'?); this context's words are: mat, sofa, floor, moon"),
    ("- at T=0.5: mat >= 75%", "- at T=0.7: mat >= 75%", "at T=0.7",
     "claim 'at T=0.7: mat >= 75%': T = 0.7 is not on the dial: its grid runs from 0.5 to 2 in steps of 0.5 "
     "(nearest: 0.5, 1)"),
    ('"at T=1: top-2 = mat, sofa"', '"at T=1: top-2 = mat, moon, sofa"', "2 = mat, moon",
     "top-2 must name 2 words, not 3"),
    ('"at T=1: top-2 = mat, sofa"', '"at T=1: mat is big"', "mat is big",
     "cannot read the condition 'mat is big': write 'mat >= 80%', 'top-3 = mat, sofa, floor' or "
     "'top-p 90% = mat, sofa'"),
    ("default: {context: cat,", "default: {context: dog,", "dog", "unknown context 'dog'"),
])
def test_lab_yaml_mistakes_are_reported_where_they_are(in_tmp, old, new, needle, message):
    text = _lab_text(old, new)
    errors = _errors(_site(in_tmp, lab_yaml=text))
    assert errors == [f"{LAB}:{_at(text, needle)}: error: {message}"]


@pytest.mark.parametrize("old, new, message", [
    ("at T=0.5: mat >= 75%", "at T=0.5: mat >= 80%",
     "claim 'at T=0.5: mat >= 80%' fails: at T = 0.5, mat gets 79.61%"),
    ('"at T=1: top-2 = mat, sofa"', '"at T=1: top-2 = mat, floor"',
     "claim 'at T=1: top-2 = mat, floor' fails: at T = 1, the top 2 are mat, sofa"),
    ("at T=2: top-p 50% = mat, sofa", "at T=2: top-p 50% = mat",
     "claim 'at T=2: top-p 50% = mat' fails: at T = 2, the top-p 50% set is mat, sofa"),
    ("at T=0.5: mat >= 75%", "at T=0.5: mat < 80%",
     "claim 'at T=0.5: mat < 80%' holds (mat gets 79.61%) but the dial shows mat 80% at T = 0.5, where it "
     "does not look true: write a bound the shown figure meets too"),
])
def test_a_failing_claim_fails_the_build_at_its_line_with_the_number(in_tmp, old, new, message):
    text = _lab_text(old, new)
    errors = _errors(_site(in_tmp, lab_yaml=text))
    assert errors == [f"{LAB}:{_at(text, new)}: error: {message}"]


@pytest.mark.parametrize("old, new, needle, message", [
    ("    answer: 0.5\n", "    answer: 1\n", "1\n",
     "answer key 1 is wrong: 'mat >= 75%' holds at T = 0.5 (at T = 0.5, mat gets 79.61%; at T = 1, mat gets "
     "58.21%; at T = 2, mat gets 43.73%)"),
    ("condition: mat >= 75%", "condition: mat >= 99%", "mat >= 99%",
     "no choice satisfies 'mat >= 99%', so the question has no right answer: at T = 0.5, mat gets 79.61%; "
     "at T = 1, mat gets 58.21%; at T = 2, mat gets 43.73%"),
    ("condition: mat < 60%", "condition: mat < 90%", "mat < 90%",
     "every choice satisfies 'mat < 90%', so the question has no wrong answer: at T = 0.5, mat gets 79.61%; "
     "at T = 1, mat gets 58.21%; at T = 2, mat gets 43.73%"),
    ("choices: [0.5, 1, 2]\n    answer", "choices: [0.5, 1.25, 2]\n    answer", "1.25",
     "T = 1.25 is not on the dial: its grid runs from 0.5 to 2 in steps of 0.5 (nearest: 1, 1.5)"),
    ("condition: mat >= 75%", "condition: rug >= 75%", "rug",
     "unknown word 'rug'; this context's words are: mat, sofa, floor, moon"),
    ("    context: cat\n", "    context: cta\n", "cta",
     "unknown context 'cta' (did you mean 'cat'?); contexts are declared under 'sampling' in lab.yaml"),
    ("    choices: [0.5, 1, 2]\n    answer", "    choice: [0.5, 1, 2]\n    answer", "choice:",
     "unknown key 'choice' (did you mean 'choices'?)"),
])
def test_dial_question_mistakes_are_reported_where_they_are(in_tmp, old, new, needle, message):
    text = _quiz_text(old, new)
    errors = _errors(_site(in_tmp, quiz_yaml=text))
    assert f"{QUIZ}:{_at(text, needle)}: error: {message}" in errors


# -- the kind and the real lab ------------------------------------------------------------------------
def _share(text: str, words) -> Condition:
    word, op, bound = text.split()
    return Condition("share", (words.index(word),), op, float(bound.rstrip("%")) / 100, text)


def test_a_shown_share_is_the_dials_figure_unless_that_would_look_wrong():
    words = ["mat", "sofa", "floor", "bed", "roof", "table", "moon", "piano"]
    probs = decoding.softmax([4.1, 3.2, 2.9, 2.4, 1.5, 1.1, -0.5, -1.2], [0.3, 1, 3])  # [3, 8]
    assert 100 * probs[2, 6] > 5 and dial_figure(probs[2], 6) == "5%"  # moon at T = 3: 5.196%
    assert share_figure(_share("moon > 5%", words), probs[2]) == "5.2%"  # not "5%" beside "more than 5%"
    assert share_figure(_share("moon >= 5%", words), probs[2]) == "5%"
    assert share_figure(_share("moon <= 5%", words), probs[2]) == "5.2%"  # false, and visibly so
    assert share_figure(_share("moon < 5%", words), probs[2]) == "5%"  # false, and "5%" shows it
    assert share_figure(_share("mat >= 90%", words), probs[0]) == "93%" == dial_figure(probs[0], 0)  # 93.30%
    assert share_figure(_share("piano < 1%", words), probs[1]) == "<1%"
    assert share_figure(_share("piano > 0.2%", words), probs[1]) == "0.25%"  # 0.246%: "<1%" cannot say, "0.2%" would look false


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-8, 8), min_size=2, max_size=8), st.sampled_from([">", ">=", "<", "<="]),
       st.integers(0, 1000))
def test_a_shown_share_always_looks_as_true_as_it_is(logits, op, tenths):
    probs = decoding.softmax(logits, [1])[0]
    words = [f"w{i}" for i in range(len(logits))]
    condition = _share(f"w0 {op} {tenths / 10}%", words)
    figure = share_figure(condition, probs)
    holds = evaluate(condition, probs)[0]
    number, bound = float(figure.strip("<>%")), tenths / 10
    # what the figure can stand for: "<1%" any value in (0, 1), ">99%" any in (99, 100), else itself
    ends = {"<": (1e-9, number - 1e-9), ">": (number + 1e-9, 100 - 1e-9)}.get(figure[0], (number, number))
    looks = {">": lambda v: v > bound, ">=": lambda v: v >= bound, "<": lambda v: v < bound,
             "<=": lambda v: v <= bound}[op]
    assert looks(ends[0]) == looks(ends[1]) == holds, figure
    if figure != dial_figure(probs, 0):  # a finer figure only where the dial's would mislead
        assert "." in figure


def test_the_kind_is_registered_and_describes_itself():
    kind = kinds.get_kind("sampling")
    assert isinstance(kind, SamplingKind)
    assert kind.question_types == ("dial",) and kind.widget_title == "The dial"
    assert {"lab.yaml", "questions"} <= set(kind.scaffold("x", "X"))
    assert (kind.folder / "widget.html").is_file() and (kind.folder / "question.html").is_file()


def test_the_scaffold_is_a_lab_that_builds(in_tmp):
    root = _site(in_tmp)
    lab = root / "labs" / "dial"
    scaffold = SamplingKind().scaffold("dial", "Dial")
    head = (lab / "lab.yaml").read_text().split("sampling:")[0]
    (lab / "lab.yaml").write_text(head + "legend:" + scaffold["lab.yaml"].split("legend:", 1)[1])
    (lab / "quiz.yaml").write_text("questions:\n" + scaffold["questions"])
    files, _ = build_files(root, None)
    assert "labs/dial/index.html" in files


def test_the_real_lab_builds_with_its_claims(in_tmp):
    root = in_tmp / "content"
    shutil.copytree(ROOT / "content", root)
    files, content = build_files(root, None)
    lab = next(lab for lab in content.labs if lab.slug == "sampling")
    assert lab.kind == "sampling" and lab.number == 8
    assert len(lab.quiz.questions) >= 6 and any(q.type == "dial" for q in lab.quiz.questions)
    page = files["labs/sampling/index.html"].decode()
    data = lab_data(page, text=True)
    assert len(data) < 12000  # a few KB: the top tokens and the rest's total; the tail is a file of its own
    assert "a real model" in page and data.count('"ids"') == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40))
def test_the_tail_is_its_parts_as_runs_of_equal_values(parts):
    from generator.kinds.sampling.real import tail_runs

    runs = tail_runs(sorted(parts, reverse=True))
    assert [value for value, count in runs for _ in range(count)] == sorted(parts, reverse=True)
    assert all(count > 0 for _, count in runs) and all(a[0] != b[0] for a, b in zip(runs, runs[1:]))
