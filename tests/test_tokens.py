"""The tokens kind (lab 03): its build-time tokenizing against wordpiece.py, claims and answer keys
checked at their line with the computed truth, the scaffold, and the teaching text's numbers.
Run: ``python -m pytest tests/test_tokens.py -q``"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from conftest import lab_data, run_labs as run

import generator.kinds as kinds
from generator.models.wordpiece import clean_text, encode, wordpiece
from generator.kinds.tokens.pieces import count, search, steps
from generator.runtime.site import bundle_at

ROOT = Path(__file__).resolve().parent.parent
THEME = ROOT / "theme"
LAB = ROOT / "content" / "labs" / "tokens"
BUNDLE = ROOT / "content" / "models" / "all-minilm-l6-v2"


@pytest.fixture(scope="module")
def tokenizer():
    return bundle_at(BUNDLE).tokenizer


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


def check(capsys):
    return run(capsys, "check", "--content", "content", "--theme", str(THEME))


def edit(project: Path, name: str, old: str, new: str) -> int:
    """Replace ``old`` (once) in the lab's file; the 1-based line where the new text starts."""
    path = project / "content/labs/tokens" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def test_the_kind_is_registered_and_describes_itself():
    assert "tokens" in kinds.kind_names()
    kind = kinds.get_kind("tokens")
    assert kind.question_types == ("pieces",) and "WordPiece" in kind.description


# -- what the build computes ------------------------------------------------------------------------

def test_the_traced_search_gives_wordpieces_pieces_on_many_words(tokenizer):
    rng = random.Random(3)
    pieces = [p.removeprefix("##") for p in tokenizer.vocab if not p.startswith("[")]
    words = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 5))) for _ in range(2000)]
    words += ["unhappiness", "😀", "x" * 101, "東", "naive", "3.14159"]
    for word in words:
        traced = search(word, tokenizer)
        assert traced["pieces"] == wordpiece(word, tokenizer), word
        found = [t["piece"] for t in traced["tries"] if t["found"]]
        assert traced["unknown"] or traced["tooLong"] or found == traced["pieces"], word


def test_the_search_tries_longest_first_and_continues_with_hashes(tokenizer):
    traced = search("unhappiness", tokenizer)
    assert traced["pieces"] == ["un", "##ha", "##pp", "##iness"]
    assert traced["tries"][0] == {"start": 0, "end": 11, "piece": "unhappiness", "found": False}
    starts = [t for t in traced["tries"] if t["start"] == 2]
    assert [t["end"] for t in starts] == list(range(11, 3, -1)) and starts[0]["piece"] == "##happiness"


def test_steps_show_the_normalisation(tokenizer):
    st = steps("Café", tokenizer)
    assert (st["lowered"], st["stripped"], st["words"]) == ("café", "cafe", ["cafe"])
    st = steps("didn't", tokenizer)
    assert st["words"] == ["didn", "'", "t"] and len(st["searches"]) == 3


def test_counts_are_characters_whitespace_words_and_pieces(tokenizer):
    c = count("Bonjour, comment allez-vous aujourd'hui ?", tokenizer)
    assert (c.chars, c.spaced_words, len(c.pieces)) == (41, 5, 16)
    assert list(c.pieces) == list(encode(c.text, tokenizer).tokens[1:-1])


def test_the_shipped_lab_builds_and_its_page_shows_what_python_computes(project, capsys, tokenizer):
    code, _, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert (code, err) == (0, []), err
    html = (project / "site/labs/tokens/index.html").read_text(encoding="utf-8")
    data = lab_data(html)
    # the scripts it loads later are in the site, once, under the bundle's id
    for key in ("code", "vocab"):
        assert (project / "site/labs/tokens" / data["runtime"][key]).is_file()
    assert data["runtime"]["vocab"] not in html.replace(json.dumps(data["runtime"]["vocab"]), "")
    enc = encode(data["text"], tokenizer)
    shown = re.findall(r'<li class="tk-piece[^"]*" data-id="(\d+)"><span class="tk-p">([^<]*)</span>',
                       html.split('id="tk-tokens"')[1].split("</ol>")[0])
    assert [(int(i), p) for i, p in shown] == list(zip(enc.ids, (t.replace("&", "&amp;") for t in enc.tokens)))
    for e in (x for x in re.findall(r'<tr id="tk-ex-([a-z0-9_-]+)"', html)):
        assert e in html
    assert "KB" in html and f"{len(tokenizer.vocab):,} pieces" in html


# -- claims and answer keys, each failing at its line --------------------------------------------------

@pytest.mark.parametrize("old, new, message", [
    ("'\"unhappiness\" has 4 pieces'", "'\"unhappiness\" has 3 pieces'",
     "claim '\"unhappiness\" has 3 pieces' is false: \"unhappiness\" is 4 pieces: un ##ha ##pp ##iness"),
    ("'\"😀\" is [UNK]'", "'\"pizza\" is [UNK]'", "is false: \"pizza\" is 1 piece: pizza"),
    ("'\"code\" needs more pieces per word than \"en-capital\"'",
     "'\"code\" needs fewer pieces per word than \"en-capital\"'",
     "example 'code' has 23 pieces for 12 words (1.92 per word), example 'en-capital' 7 for 6 (1.17 per word)"),
    ("'\"fr-greeting\" needs more pieces than \"en-greeting\"'",
     "'\"fr-greeting\" needs fewer pieces than \"en-greeting\"'",
     "example 'fr-greeting' has 16 pieces, example 'en-greeting' 8"),
    # the whole word is [UNK]; with a space, only the emoji is, and the claim fails
    ("'\"pizza😀\" is [UNK]'", "'\"pizza 😀\" is [UNK]'", "\"pizza 😀\" is 2 pieces: pizza [UNK]"),
    ("'\"résumé\" is resume'", "'\"résumé\" is résumé'", "\"résumé\" is 1 piece: resume"),
    ("'\"Paris\" is paris'", "'\"Paris\" is Paris'", "\"Paris\" is 1 piece: paris"),
    ("'\"rare-word\" has 8 pieces'", "'\"rare-wurd\" has 8 pieces'", "'rare-wurd' looks like an example id"),
    ("'\"rare-word\" has 8 pieces'", "'rare-word is long'", "cannot read the claim"),
])
def test_a_false_claim_fails_at_its_line_with_the_computed_truth(project, capsys, old, new, message):
    line = edit(project, "lab.yaml", old, new)
    code, _, err = check(capsys)
    assert code == 1
    assert any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and message in e for e in err), err


@pytest.mark.parametrize("old, new, message", [
    ("    answer: 4\n", "    answer: 3\n", "answer key 3 is wrong: \"unhappiness\" is 4 pieces"),
    ("    choices: [1, 3, 4, 11]\n", "    choices: [1, 3, 11]\n", "no choice is right: \"unhappiness\" is 4 pieces"),
    ("    answer: \"##izer\"\n", "    answer: \"token\"\n", "answer key 'token' is wrong: 'continuation' picks ##izer, ##s"),
    ("    answer: \"[UNK]\"\n", "    answer: pizza\n", "answer key 'pizza' is wrong: 'unknown' picks [UNK] of"),
    ("    pick: unknown\n", "    pick: \"##s\"\n", "no piece is picked by '##s', so the question has no right answer"),
])
def test_a_wrong_answer_key_fails_at_its_line(project, capsys, old, new, message):
    line = edit(project, "quiz.yaml", old, new)
    code, _, err = check(capsys)
    assert code == 1
    assert any(re.match(rf"content/labs/tokens/quiz.yaml:{line}:\d+: error: ", e) and message in e for e in err), err


def test_same_as_names_another_example(project, capsys):
    line = edit(project, "lab.yaml", "      same_as: en-capital\n", "      same_as: en-capitol\n")
    code, _, err = check(capsys)
    assert code == 1 and any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and "not 'en-capitol'" in e
                             and "en-capital" in e for e in err), err


def test_why_it_matters_compares_translations_piece_for_piece_as_transformers_counts(project, capsys):
    """The figure is the pieces of a text over the pieces of the same meaning in English, both
    counted by transformers' BertTokenizer: not pieces per space-separated word."""
    from conftest import reference

    slow = reference("transformers").BertTokenizer(str(BUNDLE / "vocab.txt"))
    code, _, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert (code, err) == (0, []), err
    html = (project / "site/labs/tokens/index.html").read_text(encoding="utf-8")
    texts = dict(re.findall(r"- id: ([a-z0-9-]+)\n\s+text: (.+)", (LAB / "lab.yaml").read_text("utf-8")))
    pairs = dict(re.findall(r"- id: ([a-z0-9-]+)\n\s+text: .+\n\s+same_as: ([a-z0-9-]+)", (LAB / "lab.yaml").read_text("utf-8")))
    assert pairs == {"fr-greeting": "en-greeting", "cjk": "en-capital"}
    for mine, twin in pairs.items():
        ratio = len(slow.tokenize(texts[mine])) / len(slow.tokenize(texts[twin]))
        item = html.split(f'data-example="{mine}"')[1].split("</li>")[0]
        assert f"says what {twin} says, in {f'{ratio:.2f}'.rstrip('0').rstrip('.')}× the pieces" in item, item
    assert "pieces per word" not in html.split('id="tk-matters"')[1].split("</ul>")[0]
    # the quiz's feedback speaks of pieces, not of the pick key an author wrote in quiz.yaml
    assert "continuation&#x27;" not in html and "continuation'" not in html


def test_a_missing_bundle_is_an_error_at_its_line(project, capsys):
    line = edit(project, "lab.yaml", "vocabulary: ../../models/all-minilm-l6-v2", "vocabulary: ../../models/nope")
    code, _, err = check(capsys)
    assert code == 1 and any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and "no vocabulary at" in e
                             for e in err), err
    assert not (project / "site").exists()


def test_new_tokens_lab_builds_out_of_the_box(project, capsys):
    code, out, err = run(capsys, "new", "demo", "--kind", "tokens", "--content", "content")
    assert (code, err) == (0, []), err
    assert "kind: tokens" in (project / "content/labs/demo/lab.yaml").read_text(encoding="utf-8")
    code, _, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert (code, err) == (0, []), err
    html = (project / "site/labs/demo/index.html").read_text(encoding="utf-8")
    assert 'id="tk-tokens"' in html and 'data-type="pieces"' in html
    data = lab_data(html)
    for key in ("code", "vocab"):  # its own small vocabulary, served beside the runtime's code
        assert "/assets/runtime/vocab-" in data["runtime"][key]
        assert (project / "site/labs/demo" / data["runtime"][key]).is_file()


def test_a_damaged_bundle_is_an_error_at_the_vocabulary_key(project, capsys):
    bundle = project / "content/models/all-minilm-l6-v2"
    (bundle / "vocab.txt").write_text("[PAD]\n[UNK]\n", encoding="utf-8")  # no longer what bundle.json records
    line = next(i for i, t in enumerate((project / "content/labs/tokens/lab.yaml").read_text("utf-8").splitlines(), 1)
                if t.strip().startswith("vocabulary:"))
    code, _, err = check(capsys)
    assert code == 1
    assert any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and "is not a readable vocabulary" in e
               and "vocab.txt" in e for e in err), err
    runtime = next(i for i, t in enumerate((project / "content/labs/embeddings/lab.yaml").read_text("utf-8").splitlines(), 1)
                   if t.strip().startswith("runtime:"))  # the embeddings lab names the same bundle: its error is at its key
    assert any(e.startswith(f"content/labs/embeddings/lab.yaml:{runtime}:") and "vocab.txt" in e for e in err), err


# -- the teaching text: every number it states is computed here -----------------------------------------

def _teaching_text() -> str:
    """The lab's prose: its Markdown, FAQ and quiz, and the prose keys of lab.yaml."""
    import yaml

    files = [LAB / n for n in ("gist.md", "under-the-hood.md", "what-youre-seeing.md", "code.md", "faq.yaml",
                               "quiz.yaml")]
    lab = yaml.safe_load((LAB / "lab.yaml").read_text(encoding="utf-8"))
    prose = [lab["tagline"], lab["summary"], lab["tokens"]["prompt"]]
    prose += [v for item in lab["legend"] + lab["cards"] for k, v in item.items() if k != "icon"]
    prose += [e.get("note", "") for e in lab["tokens"]["examples"]]
    return "\n".join([p.read_text(encoding="utf-8") for p in files] + prose)


def _bpe_model_name() -> str:
    from llama_fixtures import smollm2_gguf

    from generator.kinds.tokens import bytelevel

    return bytelevel.page_ref("smollm2-135m-instruct", smollm2_gguf())["model"].split("/")[-1]


def test_every_number_the_teaching_text_states_is_recomputed(tokenizer):
    text = _teaching_text()
    c = lambda s: count(s, tokenizer)  # noqa: E731
    facts = {
        "30,522": f"{len(tokenizer.vocab):,}",
        "4 pieces": f"{len(c('unhappiness').pieces)} pieces",
        "['un', '##ha', '##pp', '##iness']": repr(list(c("unhappiness").pieces)),
        "`un` `##ha` `##pp` `##iness`": " ".join(f"`{p}`" for p in c("unhappiness").pieces),
        "answer: 4": f"answer: {len(c('unhappiness').pieces)}",
        "994 of": f"{sum(p.startswith('[unused') for p in tokenizer.vocab)} of",
        "all-MiniLM-L6-v2": bundle_at(BUNDLE).meta["model"]["name"].split("/")[-1],
        # the decoder whose BPE the lab compares with, as its page files name it
        "SmolLM2-135M-Instruct": _bpe_model_name(), "SmolLM2": _bpe_model_name().split("-")[0],
    }
    for stated, computed in facts.items():
        assert stated in text and stated == computed, (stated, computed)
    # no other number: a new one must be added to the facts above
    left = text
    for stated in facts:
        left = left.replace(stated, "")
    left = re.sub(r"choices: \[[\d, ]+\]", "", left)  # the quiz's offered counts
    left = re.sub(r"```.*?```", "", left, flags=re.S)  # code: its numbers are Python's, not statements
    assert re.findall(r"\d", left) == [], re.findall(r".{20}\d.{20}", left)


def test_the_teaching_texts_statements_about_pieces_hold(tokenizer):
    assert count("Paris", tokenizer).pieces == count("paris", tokenizer).pieces == count("PARIS", tokenizer).pieces
    assert count("café", tokenizer).pieces == ("cafe",)
    assert steps("で", tokenizer)["stripped"] == "て"  # "the Japanese で … becomes て"
    assert count("😀", tokenizer).is_unknown() and count("首", tokenizer).is_unknown()
    fr, en = count("Bonjour, comment allez-vous aujourd'hui ?", tokenizer), count("Good morning, how are you today?",
                                                                                   tokenizer)
    assert fr.per_word > en.per_word  # "the same greeting costs more"
    code = count("for (let i = 0; i < n; i++) total += x[i];", tokenizer)
    assert all(p in code.pieces for p in "()[];=+")  # "code spends a piece on every bracket and operator"
    assert clean_text("a\u00a0b").split() == ["a", "b"]
    assert count("pizza😀", tokenizer).is_unknown()  # the whole word, pizza too
    assert count("résumé", tokenizer).pieces == count("resume", tokenizer).pieces == ("resume",)
    assert count("नमस्ते", tokenizer).pieces == ("न", "##म", "##स", "##त")
    # "no text produces" the [unused] entries: the basic tokenizer splits their brackets off
    assert all(not p.startswith("[unused") for p in count("[unused0] [unused993]", tokenizer).pieces)


def _reference_tokenizer():
    from conftest import reference

    return reference("transformers").BertTokenizer(str(BUNDLE / "vocab.txt"))


def test_the_teaching_texts_statements_hold_for_transformers_too():
    """The same statements, checked against Hugging Face's BertTokenizer rather than ours."""
    slow = _reference_tokenizer()
    assert slow.tokenize("pizza😀") == ["[UNK]"] and slow.tokenize("pizza 😀") == ["pizza", "[UNK]"]
    assert slow.tokenize("résumé") == slow.tokenize("resume") == ["resume"]
    assert slow.tokenize("नमस्ते") == ["न", "##म", "##स", "##त"]
    assert sum(p.startswith("[unused") for p in slow.get_vocab()) == 994 and len(slow) == 30522
    assert all(slow.tokenize(f"a{c}b") == ["a", c, "b"] for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # FAQ
    # adding a piece is routine: a new id, and a new row once the embedding table is resized
    torch = __import__("torch")
    transformers = __import__("transformers")
    assert slow.add_tokens(["pizza😀"]) == 1 and slow.tokenize("pizza😀") == ["pizza😀"]
    model = transformers.BertModel(transformers.BertConfig(vocab_size=30522, hidden_size=8, num_hidden_layers=1,
                                                           num_attention_heads=1, intermediate_size=8))
    model.resize_token_embeddings(len(slow))
    assert model.get_input_embeddings().weight.shape == torch.Size([30523, 8])


def test_code_mds_function_gives_transformers_pieces_even_on_long_words(tokenizer):
    """code.md's Python, run as written, against BertTokenizer on words up to and over its length limit."""
    source = re.search(r"```python\n(.*?)```", (LAB / "code.md").read_text("utf-8"), re.S).group(1)
    source = source.split("# The Hugging Face")[0]
    scope: dict = {}
    exec(source, scope)  # noqa: S102 — the lab's own code sample
    slow = _reference_tokenizer()
    words = ["unhappiness", "tokenization", "a" * 100, "a" * 101, "x" * 250, "zzzqqq", "naive"]
    for w in words:
        assert scope["wordpiece"](w, tokenizer.vocab) == slow.tokenize(w), w


def _pair_tokens() -> list[str]:
    """transformers' BertTokenizer on a pair of sentences, with MiniLM's vocabulary."""
    from conftest import reference

    transformers = reference("transformers")
    slow = transformers.BertTokenizer(str(BUNDLE / "vocab.txt"))
    return slow.convert_ids_to_tokens(slow("a", "b")["input_ids"])


def _bpe_count(text: str):
    from llama_fixtures import smollm2_gguf

    from generator.kinds.tokens import bytelevel

    return bytelevel.count(text, bytelevel.tokenizer(smollm2_gguf()))


def test_numbers_written_as_words_are_checked_too(tokenizer):
    import unicodedata

    text = _teaching_text()
    spelt = re.findall(r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) \w+", text, re.I)
    checked = {
        "eight pieces": len(count("antidisestablishmentarianism", tokenizer).pieces) == 8,  # the rare-word note
        "two dots": len([c for c in unicodedata.normalize("NFD", "で") if unicodedata.category(c) == "Mn"]) == 1
        and unicodedata.name(unicodedata.normalize("NFD", "で")[1]).endswith("VOICED SOUND MARK"),  # the dakuten
        "two sentences": _pair_tokens() == ["[CLS]", "a", "[SEP]", "b", "[SEP]"],  # FAQ: [SEP] between two sentences
        "two tokenizers": True,  # WordPiece and BPE, named in the same sentence
        "three tokens": len(_bpe_count("😀").ids) == 3,  # "😀 is three tokens holding its four bytes"
        "four bytes": len("😀".encode("utf-8")) == 4 and "".join(_bpe_count("😀").pieces).count("<0x") == 4,
    }
    assert sorted(set(spelt)) == sorted(checked) and all(checked.values()), spelt


def test_a_bundles_page_files_are_the_runtimes_own_so_other_kinds_can_give_the_same(tokenizer):
    """The tokens kind gives exactly generator.runtime.site.site_files(bundle): the path and bytes an
    attention lab of the same bundle gives, which the build writes once."""
    from types import SimpleNamespace

    from generator.kinds.tokens import TokensKind
    from generator.runtime import site

    labs = [SimpleNamespace(spec=SimpleNamespace(vocabulary=str(BUNDLE.resolve()), bpe_gguf="", content=None))] * 2
    files = TokensKind().site_files(labs, {}, None)
    assert files == site.site_files(bundle_at(BUNDLE))
    assert sum(p.rsplit("/", 1)[-1].startswith("model-vocab.") for p in files) == 1
