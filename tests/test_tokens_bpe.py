"""The tokens kind's second tokenizer: the decoder's byte-level BPE beside WordPiece (``bpe:``),
its claims and ``pieces`` questions checked with generator/models/bpe.py at their line, the page
files it needs (never the weights), and a site without the fetched decoder, which builds with
WordPiece only and says what to run.
Run: ``python -m pytest tests/test_tokens_bpe.py -q``"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import lab_data, run_labs as run
from llama_fixtures import smollm2_gguf
from test_tokens import check, edit

from generator.kinds.tokens import bytelevel
from generator.models import bpe, store

ROOT = Path(__file__).resolve().parent.parent
THEME = ROOT / "theme"
MODEL = "smollm2-135m-instruct"

pytestmark = pytest.mark.project("shipped")


@pytest.fixture(scope="module")
def tok():
    return bytelevel.tokenizer(smollm2_gguf())  # skips without the GGUF, fails so in CI


def test_bpe_pieces_are_bpe_py_tokens_written_visibly(tok):
    """What claims and questions compare with: every token's bytes as bpe.visible writes them,
    case and accents kept, a leading space part of the token, an emoji as bytes (never [UNK])."""
    for text in ("Paris", "PARIS", "résumé", "Hello world", "😀", "pizza😀", "東京は日本の首都です", "  two  spaces"):
        counted = bytelevel.count(text, tok)
        enc = bpe.encode(text, tok, special=False)
        assert counted.ids == tuple(enc.ids) and bpe.decode(enc.ids, tok) == text
        assert counted.pieces == tuple(bpe.visible(bpe.token_bytes(i, tok)) for i in enc.ids)
        assert "[UNK]" not in counted.pieces
    assert bytelevel.count("Paris", tok).pieces != bytelevel.count("PARIS", tok).pieces  # case kept
    assert bytelevel.count("Hello world", tok).pieces == ("Hello", "␣world")
    assert "".join(bytelevel.count("😀", tok).pieces) == "<0xF0><0x9F><0x98><0x80>"  # four bytes, no [UNK]


@pytest.mark.parametrize("old, new, message", [
    ("bpe: '\"Paris\" is Paris'", "bpe: '\"Paris\" is paris'", "BPE claim '\"Paris\" is paris' is false: \"Paris\" is 1 piece: Paris"),
    ("bpe: '\"Hello world\" is Hello ␣world'", "bpe: '\"Hello world\" is Hello world'",
     "is false: \"Hello world\" is 2 pieces: Hello ␣world"),
    ("bpe: '\"😀\" is <0xF0><0x9F> <0x98> <0x80>'", "bpe: '\"😀\" is [UNK]'", "\"😀\" is 3 pieces: <0xF0><0x9F> <0x98> <0x80>"),
    ("bpe: '\"cjk\" needs more pieces than \"en-capital\"'", "bpe: '\"cjk\" needs fewer pieces than \"en-capital\"'",
     "example 'cjk' has 18 pieces, example 'en-capital' 8"),
])
def test_a_false_bpe_claim_fails_at_its_line_with_bpes_truth(project, capsys, tok, old, new, message):
    line = edit(project, "lab.yaml", old, new)
    code, _, err = check(capsys)
    assert code == 1
    assert any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and message in e for e in err), err


def test_the_bpe_key_names_a_decoder_and_a_bpe_claim_needs_it(project, capsys, tok):
    line = edit(project, "lab.yaml", "  bpe: smollm2-135m-instruct\n", "  bpe: smollm2-135m\n")
    code, _, err = check(capsys)
    assert code == 1 and any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and "not 'smollm2-135m'" in e
                             and "smollm2-135m-instruct" in e for e in err), err
    edit(project, "lab.yaml", "  bpe: smollm2-135m\n", "")
    code, _, err = check(capsys)
    assert code == 1 and any("a BPE claim needs the lab's 'bpe:' model" in e for e in err), err


QUESTION = """
  - id: bpe-count
    type: pieces
    tokenizer: bpe
    prompt: How many BPE tokens is **😀**?
    text: "😀"
    choices: [1, 3, 4]
    answer: 3
  - id: bpe-pick
    type: pieces
    tokenizer: bpe
    prompt: Click the token that carries the space.
    text: Hello world
    pick: ␣world
"""


def test_a_bpe_pieces_question_is_computed_with_bpe_and_its_key_checked(project, capsys, tok):
    quiz = project / "content/labs/tokens/quiz.yaml"
    quiz.write_text(quiz.read_text(encoding="utf-8") + QUESTION, encoding="utf-8")
    code, _, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert (code, err) == (0, []), err
    html = (project / "site/labs/tokens/index.html").read_text(encoding="utf-8")
    right = re.findall(r'data-option="(bpe-[a-z]+-[a-z0-9]+)" data-correct', html)
    assert sorted(right) == ["bpe-count-n3", "bpe-pick-p1"], right
    line = edit(project, "quiz.yaml", "    answer: 3\n", "    answer: 4\n")
    code, _, err = check(capsys)
    assert code == 1 and any(re.match(rf"content/labs/tokens/quiz.yaml:{line}:\d+: error: answer key 4 is wrong: "
                                      rf"\"😀\" is 3 pieces", e) for e in err), err


def test_the_site_carries_the_tokenizer_and_never_the_weights_for_a_tokens_lab(tok):
    from generator.runtime.site import decoder_site_files

    path = store.locate(MODEL)
    files = bytelevel.site_files(path)
    names = sorted(p.rsplit("/", 1)[-1].split(".")[0] for p in files)
    assert names == ["model-license", "model-manifest", "model-tokenizer", "runtime"], names
    assert set(files) < set(decoder_site_files(path))
    ref = bytelevel.page_ref(MODEL, path)
    tokenizer = next(data for p, data in files.items() if "model-tokenizer" in p)
    assert 300_000 < ref["gzip"] < 500_000 and ref["gzip"] < len(tokenizer)  # the 0.43 MB said on the page


def test_without_the_decoder_lab_03_builds_with_wordpiece_only_and_one_note_says_what_to_run(
        project, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("LABS_MODELS_DIR", str(tmp_path / "no-models"))
    code, out, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert code == 0, err
    said = [line for line in out + err if "BPE tokenizer of smollm2-135m-instruct is not fetched" in line]
    assert len(said) == 1 and "run `labs models fetch smollm2-135m-instruct`" in said[0], out + err
    html = (project / "site/labs/tokens/index.html").read_text(encoding="utf-8")
    assert "built without the smollm2-135m-instruct tokenizer" in html and 'id="tk-bpe-load"' not in html
    assert lab_data(html)["bpe"] == {"reason": lab_data(html)["bpe"]["reason"]}
    assert 'id="tk-tokens"' in html
    # what the note says to do works: with the model there, the next build (its cache kept: a
    # lab's key holds what is fetched) has BPE
    assert said[0].endswith("` and build again")
    monkeypatch.delenv("LABS_MODELS_DIR")
    smollm2_gguf()
    assert (project / ".labs-cache").is_dir()
    code, out, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert (code, err) == (0, []), err
    html = (project / "site/labs/tokens/index.html").read_text(encoding="utf-8")
    assert 'id="tk-bpe-load"' in html and not [line for line in out if "not fetched" in line], out


def test_new_tokens_lab_builds_with_no_warning(project, capsys):
    code, out, err = run(capsys, "new", "demo", "--kind", "tokens", "--content", "content")
    assert (code, err) == (0, []), err
    code, out, err = run(capsys, "build", "--content", "content", "--theme", str(THEME), "--output", "site")
    assert (code, err) == (0, []), err
    assert not [line for line in out if "demo" in line and ("warning" in line or "note" in line)], out
