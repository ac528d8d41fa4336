"""WordPiece tokenisation: fixed expectations on a tiny vocabulary, and agreement with the
reference tokenizers of transformers (on the real MiniLM vocabulary when LABS_MINILM_DIR
points at it, else on the tiny one).

transformers is optional (the ``reference`` extra): its tests skip when it is absent,
unless LABS_REQUIRE_REFERENCE=1, which turns that skip into a failure.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from conftest import minilm_dir, reference

from generator.models.wordpiece import (
    WordPieceTokenizer,
    basic_tokenize,
    encode,
    is_punctuation,
    load_tokenizer,
    load_vocab,
)
from generator.errors import BuildError

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "did", "##n", "cafe", "naive", "play", "##ing", "un", "##aff", "##able",
         "14", "##15", "000", "中", "文", "北", "京", "—", "…"]  # fmt: skip


def tiny_vocab() -> list[str]:
    """Specials, ASCII punctuation, digits, letters and their ## continuations, a few words."""
    singles = list(string.punctuation) + list(string.digits) + list(string.ascii_lowercase)
    continuations = ["##" + c for c in string.digits + string.ascii_lowercase]
    return SPECIALS + singles + continuations + WORDS


def write_vocab(folder: Path, tokens: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return write_vocab(tmp_path_factory.mktemp("tiny-vocab"), tiny_vocab())


@pytest.fixture(scope="module")
def tiny(tiny_dir) -> WordPieceTokenizer:
    return load_tokenizer(tiny_dir)


# ---- fixed expectations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, pieces",
    [
        ("the cat sat", ["the", "cat", "sat"]),
        ("unaffable", ["un", "##aff", "##able"]),
        ("playing", ["play", "##ing"]),
        ("I didn't.", ["i", "did", "##n", "'", "t", "."]),
        ("Café naïve", ["cafe", "naive"]),
        ("cafe\u0301", ["cafe"]),  # decomposed accent
        ("xqz", ["x", "##q", "##z"]),
        ("Ω", ["[UNK]"]),  # no piece covers it
        ("a😀", ["[UNK]"]),  # one unknown character spoils the whole word
        ("3.1415", ["3", ".", "14", "##15"]),
        ("1,000", ["1", ",", "000"]),
        ("a" * 100, ["a"] + ["##a"] * 99),
        ("a" * 101, ["[UNK]"]),  # longer than max_input_chars_per_word
        ("北京", ["北", "京"]),  # CJK ideographs are words on their own, even unspaced
        ("cat中文mat", ["cat", "中", "文", "mat"]),
        ("the\x00cat\u200b\x07sat", ["the", "##c", "##a", "##t", "##s", "##a", "##t"]),  # control chars vanish, joining the word
        ("the\tcat\nsat\r\u3000on", ["the", "cat", "sat", "on"]),
        ("   the     mat   ", ["the", "mat"]),
        ("$5^`~", ["$", "5", "^", "`", "~"]),  # ASCII symbols count as punctuation
        ("cat—mat…", ["cat", "—", "mat", "…"]),
        ("", []),
    ],
    ids=[
        "words", "continuations", "suffix", "contraction", "accents", "combining-accent", "letters",
        "unknown-char", "emoji", "decimal", "thousands", "100-chars", "101-chars", "chinese",
        "chinese-unspaced", "control-chars", "whitespace-kinds", "multiple-spaces", "ascii-symbols",
        "unicode-punctuation", "empty",
    ],
)  # fmt: skip
def test_pieces_on_tiny_vocab(tiny, text, pieces):
    encoding = encode(text, tiny)
    assert list(encoding.tokens) == ["[CLS]", *pieces, "[SEP]"]
    assert encoding.ids[0] == tiny.vocab["[CLS]"] and encoding.ids[-1] == tiny.vocab["[SEP]"]
    assert all(tiny.vocab[t] == i for t, i in zip(encoding.tokens, encoding.ids))


def test_word_ids_point_pieces_at_their_words(tiny):
    encoding = encode("Unaffable cats didn't", tiny)
    assert encoding.words == ("unaffable", "cats", "didn", "'", "t")
    assert list(zip(encoding.tokens, encoding.word_ids)) == [
        ("[CLS]", None), ("un", 0), ("##aff", 0), ("##able", 0), ("cat", 1), ("##s", 1),
        ("did", 2), ("##n", 2), ("'", 3), ("t", 4), ("[SEP]", None),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text, source_words",
    [
        ("Café didn't!", ["Café", "didn", "'", "t", "!"]),
        ("  The   CAT ", ["The", "CAT"]),
        ("cafe\u0301 ok", ["cafe\u0301", "ok"]),  # the combining accent stays with its word
        ("a\x07b c", ["ab", "c"]),  # control characters dropped from the display form too
        ("mixed中文", ["mixed", "中", "文"]),
    ],
    ids=["accent-punctuation", "spaces-case", "combining", "control", "chinese"],
)
def test_source_words_keep_the_authors_spelling(tiny, text, source_words):
    encoding = encode(text, tiny)
    assert list(encoding.source_words) == source_words
    assert len(encoding.word_spans) == len(encoding.words)


def test_punctuation_classes():
    assert all(is_punctuation(c) for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¿«»—…“”")
    assert not any(is_punctuation(c) for c in "aZ09 é中😀")


def test_basic_tokenize_cased_keeps_case_and_accents(tiny):
    cased = WordPieceTokenizer(vocab=tiny.vocab, lower_case=False)
    assert basic_tokenize("Café Naïve", cased) == ["Café", "Naïve"]
    stripped = WordPieceTokenizer(vocab=tiny.vocab, lower_case=False, strip_accents=True)
    assert basic_tokenize("Café Naïve", stripped) == ["Cafe", "Naive"]


def test_load_vocab_numbers_lines_like_transformers(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\r\n[UNK]\nx\nx\ny")  # CRLF, a repeat, no final newline
    assert load_vocab(path) == {"[PAD]": 0, "[UNK]": 1, "x": 3, "y": 4}


@pytest.mark.parametrize(
    "content, message",
    [(None, "not found"), (b"", "empty"), (b"\xff\xfe\n", "UTF-8"), (b"[PAD]\nhello\n", "[CLS]")],
    ids=["missing", "empty", "not-utf8", "no-specials"],
)
def test_bad_vocabulary_is_a_build_error_naming_the_file(tmp_path, content, message):
    if content is not None:
        (tmp_path / "vocab.txt").write_bytes(content)
    with pytest.raises(BuildError, match="vocab.txt") as info:
        load_tokenizer(tmp_path)
    assert message in str(info.value)


def test_tokenizer_config_switches_are_honoured(tiny_dir, tmp_path):
    folder = write_vocab(tmp_path, tiny_vocab())
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": false}', encoding="utf-8")
    assert encode("The", load_tokenizer(folder)).tokens == ("[CLS]", "[UNK]", "[SEP]")  # "T" is not in the vocab


# ---- against the reference tokenizers --------------------------------------------------------------

TRICKY = [
    "Hello, world!",
    "I didn't go; they'd've gone.",
    "café naïve résumé Crème Brûlée",
    "cafe\u0301 e\u0301\u0301x \u0301start",
    "xyzzyqwv glorbnak florp",
    "3.14159 and 1,000,000 in 2024 at 10:30pm",
    "I ❤️ emoji 😀👍🏽 🇫🇷",
    "a" * 101,
    "b" * 100,
    "supercalifragilisticexpialidocious" * 4,
    "我爱北京天安门 mixed中文text 日本語のテキスト 한국어",
    "tab\there\x00nul\x07bell\u200bzero-width\ufeffbom",
    "multiple    spaces\n\n newlines\u00a0nbsp\u3000ideographic",
    "$5^2`~+=<>|\\ {braces} [brackets] (parens)",
    "naïve—dash “quotes” ‘single’ … ¿qué? «guillemets»",
    "U.S.A. e-mail foo@bar.com http://example.org/a?b=c",
    "İstanbul ǅ ﬁne ﬀ ß Ⅻ ① ²",
    "",
    "   ",
]
TRICKY_IDS = [
    "punctuation", "contractions", "accents", "combining-marks", "unknown-words", "numbers", "emoji",
    "101-chars", "100-chars", "long-word", "cjk", "control-chars", "whitespace", "ascii-symbols",
    "unicode-punctuation", "urls", "compatibility-chars", "empty", "blank",
]  # fmt: skip


def _vocab_folder(tiny_dir: Path) -> Path:
    """The real MiniLM vocabulary (30,522 pieces): the tricky strings need a real-sized one."""
    return minilm_dir()


def _python_reference(folder: Path):
    """The classic pure-Python BertTokenizer (``BertTokenizerLegacy`` since transformers 5)."""
    transformers = reference("transformers")
    try:
        from transformers.models.bert.tokenization_bert_legacy import (
            BertTokenizerLegacy as Slow,
        )
    except ImportError:  # transformers 4: BertTokenizer is the Python one
        Slow = transformers.BertTokenizer
    return Slow(str(folder / "vocab.txt"), do_lower_case=True)


@pytest.fixture(scope="module")
def reference_folder(tiny_dir) -> Path:
    return _vocab_folder(tiny_dir)


@pytest.mark.reference
@pytest.mark.parametrize("text", TRICKY, ids=TRICKY_IDS)
def test_matches_python_bert_tokenizer(reference_folder, text):
    slow = _python_reference(reference_folder)
    ours = encode(text, load_tokenizer(reference_folder))
    assert list(ours.tokens) == ["[CLS]", *slow.tokenize(text), "[SEP]"]
    assert list(ours.ids) == slow(text)["input_ids"]


@pytest.mark.reference
@pytest.mark.parametrize("text", TRICKY, ids=TRICKY_IDS)
def test_matches_fast_bert_tokenizer_including_word_ids(reference_folder, text):
    transformers = reference("transformers")
    fast = transformers.BertTokenizerFast.from_pretrained(str(reference_folder))
    ours = encode(text, load_tokenizer(reference_folder))
    theirs = fast(text)
    assert list(ours.ids) == theirs["input_ids"]
    assert list(ours.word_ids) == theirs.word_ids()


@pytest.mark.reference
def test_known_fast_tokenizer_difference_final_sigma(reference_folder):
    """Python's str.lower() writes a word-final capital sigma as ς; the Rust tokenizer writes σ.
    We follow the Python BertTokenizer, which BERT's original code is."""
    slow = _python_reference(reference_folder)
    ours = encode("ΣΟΦΟΣ", load_tokenizer(reference_folder))
    assert list(ours.tokens[1:-1]) == slow.tokenize("ΣΟΦΟΣ")
    assert ours.words == ("σοφος",)
