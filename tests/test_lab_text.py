"""The labs' teaching text, checked like code: each number or computed result that a sentence of
content/labs/ (or of a kind's template) states is recomputed here from the designed model, the
committed real-heads cache, the head finder or the sampling arithmetic, so that a change to any
of them that makes a sentence false fails a test instead of leaving the page wrong."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import minilm_dir

from generator.kinds.attention import realheads, scaling, teaching
from generator.build import compute_lab
from generator.content import load_lab, load_site
from generator.kinds.attention import cache as cachefile
from generator.kinds.attention.headfinder import BEATS_MAX_P
from generator.models import decoding
from generator.kinds.sampling import dial_figure
from generator.kinds.sampling.reading import share_text

ROOT = Path(__file__).resolve().parent.parent
ATTENTION = ROOT / "content" / "labs" / "attention"
SAMPLING = ROOT / "content" / "labs" / "sampling"
NAMES = {"determiners": "determiner", "coreference": "coreference", "adjectives": "adjective",
         "objects": "object", "subjects": "subject", "the word before": "previous"}


def flat(text: str) -> str:
    return " ".join(text.split())


def yaml_of(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def faq(lab: Path, faq_id: str) -> str:
    return flat(next(q["answer"] for q in yaml_of(lab / "faq.yaml") if q["id"] == faq_id))


def card(lab: Path, title: str) -> str:
    return flat(next(c["body"] for c in yaml_of(lab / "lab.yaml")["cards"] if c["title"] == title))


@pytest.fixture(scope="module")
def payload() -> dict:
    """The attention lab's payload as the build computes it (designed heads, real heads, finder)."""
    source = load_site(ROOT / "content")
    lab, problems = load_lab(source, "attention")
    assert lab is not None and not problems
    return compute_lab(lab).payload


def weight(payload: dict, sentence: str, head: str, query: str, key: str) -> dict:
    """One weight of a designed head as the page shows it (whole %, ÷√d on and off) and unrounded."""
    s = next(s for s in payload["sentences"] if s["id"] == sentence)
    h = s["heads"][head]
    q, k = s["queries"].index(query), s["keys"].index(key)
    return {"pct": h["pct"][q][k], "pct_raw": h["pct_unscaled"][q][k], "raw": h["weights_unscaled"][q][k],
            "scores": h["scores"][q], "k": k}


def said_pct(text: str, value: float) -> bool:
    """``text`` (like "99.9") is ``value`` (a share) rounded to as many decimals as ``text`` shows."""
    decimals = len(text.partition(".")[2])
    return float(text) == round(100 * value, decimals) and (decimals == 0 or round(100 * value) != float(text))


# -- ÷√d: the gap between competing q·k values, not d alone --------------------------------------


def test_the_faq_on_small_heads_states_the_same_head_contrast_the_model_computes(payload):
    text = faq(ATTENTION, "small-heads")
    said = re.search(r"what counts is the gap between competing q·k values, which switching \*\*÷√d scaling\*\* off "
                     r"multiplies by √d \(our bias stays as it is\)\. In the syntax head \(d = (\d+)\), \*mat\* has one "
                     r"verb to find, \*sat\*, its q·k (\d+) above the rest, and gives it (\d+)% instead of (\d+)%; \*sat\* "
                     r"finds two nouns tied on q·k, told apart only by the bias, so \*cat\* gets just (\d+)% instead of "
                     r"(\d+)%", text)
    assert said, text
    d_syntax, gap, mat_off, mat_on, sat_off, sat_on = said.groups()
    assert int(d_syntax) == teaching.head("syntax").d_k
    mat_sat = weight(payload, "cat-mat", "syntax", "mat", "sat")
    others = [x for j, x in enumerate(mat_sat["scores"]) if j != mat_sat["k"]]
    assert {mat_sat["scores"][mat_sat["k"]] - x for x in others} == {int(gap)}  # the only verb, by this much
    words = teaching.parse_sentence("The cat/NOUN sat/VERB on the mat/NOUN")
    assert [w.role for w in words].count("VERB") == 1 and [w.role for w in words].count("NOUN") == 2
    assert (int(mat_on), int(mat_off)) == (mat_sat["pct"], mat_sat["pct_raw"])
    sat_cat, sat_mat = weight(payload, "cat-mat", "syntax", "sat", "cat"), weight(payload, "cat-mat", "syntax", "sat", "mat")
    assert sat_cat["scores"][sat_cat["k"]] == sat_mat["scores"][sat_mat["k"]]  # a tie on q·k…
    assert sat_cat["scores"][sat_cat["k"]] > max(x for j, x in enumerate(sat_cat["scores"]) if j not in (sat_cat["k"], sat_mat["k"]))
    result = teaching.compute(words, heads=["syntax"])["syntax"]
    assert result.bias[2][1] != result.bias[2][5]  # …that only the bias breaks
    assert (int(sat_on), int(sat_off)) == (sat_cat["pct"], sat_cat["pct_raw"])
    # The contrast the FAQ draws: the same head, one row moves far more than the other.
    assert mat_sat["pct_raw"] - mat_sat["pct"] > 2 * (sat_cat["pct_raw"] - sat_cat["pct"])


def test_the_scaling_card_quotes_the_demo_and_leaves_the_small_heads_to_the_faq():
    text = card(ATTENTION, "Scaling keeps the softmax trainable")
    said = re.search(r"Switching \*\*÷√d scaling\*\* off multiplies every q·k by √d, which moves some rows far more than "
                     r"others \(see the FAQ\)\. At d = (\d+) \(demo \*\*Why divide by √d\?\*\*\) the unscaled softmax is "
                     r"nearly one-hot: (\d+)% on the top key on average", text)
    assert said, text
    big, top = (int(x) for x in said.groups())
    size = next(s for s in scaling.payload()["sizes"] if s["d"] == big)
    assert top == round(100 * size["top"])
    assert not re.search(r"\b100%", text)  # black on noir is 99.9% unscaled: no card rounds it up to all


def test_the_sqrt_demo_intro_gives_the_sizes_it_names():
    intro = flat((ROOT / "generator/kinds/attention/sqrt.html").read_text(encoding="utf-8"))
    said = re.search(r"Our heads are tiny \(d ≤ (\d+)\).*?\(MiniLM: (\d+)\)", intro)
    assert said, intro
    assert int(said.group(1)) == max(h.d_k for h in teaching.HEADS)
    config = json.loads((minilm_dir() / "config.json").read_text(encoding="utf-8"))
    assert int(said.group(2)) == config["hidden_size"] // config["num_attention_heads"]
    assert "it stretches the gaps between competing q·k values, not our bias" in intro


def test_heads_are_narrow_as_the_text_says():
    """"d = d_model / h for h heads (MiniLM: 384 / 12 = 32)", against the checkpoint's config."""
    text = card(ATTENTION, "Several heads per layer")
    said = re.search(r"d = d_model / h for h heads \(MiniLM: (\d+) / (\d+) = (\d+)\)", text)
    assert said, text
    config = json.loads((minilm_dir() / "config.json").read_text(encoding="utf-8"))
    width, heads, narrow = (int(x) for x in said.groups())
    assert (width, heads) == (config["hidden_size"], config["num_attention_heads"]) and narrow * heads == width


# -- the designed syntax head in the quiz -------------------------------------------------------


def test_the_click_sat_explanation_is_about_the_designed_head_and_its_numbers(payload):
    quiz = yaml_of(ATTENTION / "quiz.yaml")["questions"]
    text = flat(next(q for q in quiz if q["id"] == "click-sat")["explanation"])
    said = re.search(r"^Our designed syntax head .*\*cat\* \((\w+) words? away\) gets (\d+)%, \*mat\* \((\w+) away\) (\d+)%", text)
    assert said, text
    near, cat, far, mat = said.groups()
    numbers = {"one": 1, "two": 2, "three": 3, "four": 4}
    words = ["The", "cat", "sat", "on", "the", "mat"]
    assert (numbers[near], numbers[far]) == (abs(words.index("cat") - 2), abs(words.index("mat") - 2))
    assert (int(cat), int(mat)) == (weight(payload, "cat-mat", "syntax", "sat", "cat")["pct"],
                                    weight(payload, "cat-mat", "syntax", "sat", "mat")["pct"])


# -- the real heads: tokens, [CLS], the head finder ----------------------------------------------


@pytest.fixture(scope="module")
def cache() -> dict:
    loaded = cachefile.load_cache(ATTENTION / "real-heads.json")
    (sha,) = loaded["entries"]
    return loaded["entries"][sha]


def _texts(section: list) -> dict[str, str]:
    return {s["id"]: " ".join(w.text for w in teaching.parse_sentence(s["text"])) for s in section}


def test_the_tokens_the_text_names_are_the_models(cache):
    """"*didn't* is three words, `didn` `'` `t`, as the view shows; a word missing from its vocabulary
    is then cut into pieces (*postman*, in one of the head finder's sentences: `post` `##man`), which
    the view joins"."""
    text = flat((ATTENTION / "what-youre-seeing.md").read_text(encoding="utf-8"))
    assert "*didn't* is three words, `didn` `'` `t`, as the view shows" in text
    said = re.search(r"\(\*(\w+)\*, in one of the head finder's sentences: ((?:`[#\w]+` ?)+)\), which the view joins", text)
    assert said, text
    lab = yaml_of(ATTENTION / "lab.yaml")
    shown, finder = _texts(lab["widget"]["sentences"]), _texts(lab["model"]["sentences"])
    animal = cache[shown["animal"]]
    assert animal["words"][3:6] == ["didn", "'", "t"]  # three words of the view, none merged
    assert animal["piece_words"] == list(range(len(animal["words"])))
    word, pieces = said.group(1), re.findall(r"`([^`]+)`", said.group(2))
    assert not any(word in t.split() for t in shown.values())
    holder = next(t for t in finder.values() if word in t.split())
    entry = cache[holder]
    at = entry["words"].index(word)
    assert [p for p, w in zip(entry["pieces"], entry["piece_words"]) if w == at] == pieces  # one word, its pieces


def test_a_word_minilm_cannot_read_is_shown_as_unk():
    """"MiniLM shows a word it cannot read (an emoji, say) as what it read, `[UNK]`" (Try your
    own sentence): the page's model, run in NumPy, reads the emoji as [UNK], and the words shown say so."""
    from generator.runtime.bundle import reference_model
    from generator.runtime.site import bundle_at

    assert "MiniLM shows a word it cannot read (an emoji, say) as what it read, `[UNK]`" in flat(
        (ATTENTION / "what-youre-seeing.md").read_text(encoding="utf-8"))
    words = realheads.word_attention(reference_model(bundle_at(ROOT / "content" / "models" / "all-minilm-l6-v2")),
                                     "I love 🙂 and pizza").words
    assert words == ("[CLS]", "I", "love", "[UNK]", "and", "pizza", "[SEP]")  # the other words as written


def test_about_half_of_minilms_attention_lands_on_cls(cache):
    """"About half of all the attention lands on the special token [CLS]" (About the numbers)."""
    assert "About half of all the attention lands on the special token `[CLS]`" in flat(
        (ATTENTION / "what-youre-seeing.md").read_text(encoding="utf-8"))
    shown = _texts(s for s in yaml_of(ATTENTION / "lab.yaml")["widget"]["sentences"] if s.get("kind") != "cross")
    shares = [np.asarray(cache[t]["attention"])[..., 0].mean() / realheads.PER_MILLE for t in shown.values()]
    assert all(0.4 <= s <= 0.6 for s in shares), shares


def _finder_said(text: str) -> tuple[int, int, set[str]]:
    said = re.search(r"for (\d+) of the (\d+) kinds of link (?:our head finder|it) tests \(([^)]*)\)", text, re.I)
    assert said, text
    named = {NAMES[n.strip()] for n in re.split(r",| and ", said.group(3)) if n.strip()}
    return int(said.group(1)), int(said.group(2)), named


@pytest.mark.parametrize("where", ["card", "faq"])
def test_what_the_text_says_the_head_finder_shows_is_what_it_computes(payload, where):
    text = (card(ATTENTION, "Several heads per layer") if where == "card" else faq(ATTENTION, "head-roles"))
    count, total, named = _finder_said(text)
    finder = payload["real"]["finder"]
    beats = {f["relation"] for f in finder if f["beats_baseline"]}
    assert (count, total, named) == (len(beats), len(finder), beats)
    rest = total - count
    assert f"for the other {rest}" in text  # and says it cannot show one there


def test_each_relation_the_finder_reports_has_forty_held_out_pairs(payload):
    """Enough labelled pairs that its sign test can decide: at least 40 held out per relation."""
    finder = payload["real"]["finder"]
    assert len(finder) == 6
    for report in finder:
        assert report["held"]["count"] >= 40 and report["pick"]["count"] >= 40, report["relation"]


def test_the_sign_tests_weakness_is_the_fewest_wins_it_would_accept(payload):
    for report in payload["real"]["finder"]:
        for v in report["versus"]:
            n = v["wins"] + v["losses"]
            passing = [w for w in range(n + 1) if realheads.sign_test_p(w, n - w) < BEATS_MAX_P]
            assert v["needed"] == (passing[0] if passing else None), (report["relation"], v)
            if v["needed"] is not None:  # the fewest: one win fewer would not pass
                assert realheads.sign_test_p(v["needed"] - 1, n - v["needed"] + 1) >= BEATS_MAX_P
            assert (v["p"] < BEATS_MAX_P) == (v["needed"] is not None and v["wins"] >= v["needed"])


# -- sampling --------------------------------------------------------------------------------------


def test_temperature_moves_every_ratio_towards_one():
    """Quiz "ranking": from T = 1 to T = 2 every ratio of two chances moves towards 1 (so "only the
    gaps shrink" would be false) — on the model's logits of every context, for its 50 likeliest tokens."""
    quiz = yaml_of(SAMPLING / "quiz.yaml")["questions"]
    option = next(o for o in next(q for q in quiz if q["id"] == "ranking")["options"] if o.get("correct"))
    assert "ratio between any two words' chances moves towards 1" in option["text"]
    lab, problems = load_lab(load_site(ROOT / "content"), "sampling")
    assert lab is not None and not problems
    for c in lab.spec.contexts:
        assert c.model and len(c.words) == 49152
        p1, p2 = decoding.softmax(c.logits, [1, 2])
        top = np.argsort(-p1)[:50]
        for i, j in itertools.combinations(top, 2):
            r1, r2 = p1[i] / p1[j], p2[i] / p2[j]
            assert abs(np.log(r2)) <= abs(np.log(r1)) + 1e-12 and np.sign(np.log(r2)) == np.sign(np.log(r1))


def test_the_page_without_javascript_writes_chances_by_the_pages_own_rule():
    source = load_site(ROOT / "content")
    lab, problems = load_lab(source, "sampling")
    assert lab is not None and not problems
    rows = lab.spec.fallback()["rows"]
    c = lab.spec.context(lab.spec.default_context)
    probs = decoding.softmax(c.logits, [lab.spec.temperatures[lab.spec.default_t]])[0]
    assert [w for w, _ in rows[:10]] == [c.words[j] for j in np.argsort(-probs, kind="stable")[:10]]
    for word, shown in rows[:10]:
        assert shown == dial_figure(probs, c.words.index(word))
        assert shown != "0%", word  # a token that can still be drawn never reads 0%
    assert rows[10][0] == "all other 49,142 tokens"


@pytest.mark.parametrize(("pct", "parts", "total", "text"), [
    (0, 0, 100_000, "0%"), (0, 249, 100_000, "<1%"), (1, 500, 100_000, "1%"),
    (100, 99_990, 100_000, ">99%"), (100, 100_000, 100_000, "100%"), (49, 49_270, 100_000, "49%"),
], ids=["cannot-be-drawn", "under-one", "one", "nearly-all", "all", "plain"])
def test_share_text(pct, parts, total, text):
    assert share_text(pct, parts, total) == text


_WORDED = {"at least": ">=", "at most": "<=", "more than": ">", "less than": "<"}


def test_the_claims_the_text_quotes_are_checked_and_look_true_on_the_dial():
    """"*mat* gets at least 90% at T = 0.3, *moon* at least 5% at T = 3": each is a claim of
    lab.yaml (so the build checks it), holds, and reads as true against the figure the dial shows
    at that temperature (moon's 5.196% shows as 5%, so "more than 5%" would look false)."""
    text = flat((SAMPLING / "what-youre-seeing.md").read_text(encoding="utf-8"))
    quoted = re.findall(r"\*(␣?\w+)\* (?:gets )?(at least|at most|more than|less than) (\d+)% at \$T = ([\d.]+)\$", text)
    assert len(quoted) >= 2, text
    lab, problems = load_lab(load_site(ROOT / "content"), "sampling")
    assert lab is not None and not problems
    c = lab.spec.context("cat")
    written = {claim.text.replace(" ", "") for claim in c.claims}
    for word, words, bound, t in quoted:
        op = _WORDED[words]
        assert f"atT={t}:{word}{op}{bound}%" in written, (word, words, bound, t)
        p = 100 * decoding.softmax(c.logits, [float(t)])[0]
        j = c.words.index(word)
        shown = int(dial_figure(p / 100, j).strip("<>%"))
        holds = {">=": p[j] >= int(bound), "<=": p[j] <= int(bound), ">": p[j] > int(bound), "<": p[j] < int(bound)}
        looks = {">=": shown >= int(bound), "<=": shown <= int(bound), ">": shown > int(bound), "<": shown < int(bound)}
        assert holds[op] and looks[op], (word, p[j], shown)


def test_the_dial_questions_quote_the_figure_the_dial_shows():
    """A dial question's explanation says "Mat gets 93%." where the dial shows 93% (not the
    unrounded 93.30%); a finer figure only where the whole one would contradict the verdict."""
    lab, problems = load_lab(load_site(ROOT / "content"), "sampling")
    assert lab is not None and not problems
    checked = 0
    for q in (q for q in lab.quiz.questions if q.type == "dial"):
        spec = yaml_of(SAMPLING / "quiz.yaml")["questions"]
        written = next(w for w in spec if w["id"] == q.id)
        word, op, bound = re.fullmatch(r"(␣?\w+) (>=|<=|>|<) (\d+)%", written["condition"]).groups() if re.fullmatch(
            r"␣?\w+ (>=|<=|>|<) \d+%", written["condition"]) else (None, None, None)
        if word is None:
            continue
        c = lab.spec.context(written.get("context", lab.spec.default_context))
        for option in q.options:
            t = float(option.text.removeprefix("T = "))
            p = decoding.softmax(c.logits, [t])[0]
            j = c.words.index(word)
            dial = dial_figure(p, j)
            said = re.fullmatch(rf"{word[:1].upper() + word[1:]} gets ([<>]?[\d.]+%)\.", option.why_html)
            assert said, option.why_html
            compare = {">=": float.__ge__, "<=": float.__le__, ">": float.__gt__, "<": float.__lt__}[op]
            holds = compare(100 * float(p[j]), float(bound))
            if said[1] != dial:  # only where the dial's whole figure would look like the wrong verdict
                assert dial[0].isdigit() and compare(float(dial[:-1]), float(bound)) != holds, (said[1], dial)
                assert compare(float(said[1][:-1]), float(bound)) == holds, (said[1], dial)
            checked += 1
    assert checked >= 6
