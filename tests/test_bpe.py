"""The byte-level BPE tokenizer (generator/models/bpe.py) against the tokenizer SmolLM2 was trained with.

**Which reference, and why.** SmolLM2's own ``tokenizer.json`` pre-tokenizes with
``Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, trim_offsets=True,
use_regex=True)]``, decodes with ``ByteLevel``, and its BPE model has no unknown token and no byte
fallback; llama.cpp names that pre-tokenizer ``smollm`` (the pair ``\\p{N}`` + GPT-2's expression),
which is what the GGUF's ``tokenizer.ggml.pre`` says. transformers' GGUF loader
(``AutoTokenizer.from_pretrained(folder, gguf_file=...)``) is *not* faithful to it: it rebuilds
the tokenizer with ``ByteLevel`` alone and drops the ``Digits`` step, so it splits whitespace
before a numeral differently ("a  1": ``a``, ``Ġ``, ``Ġ``, ``1`` instead of ``a``, ``ĠĠ``, ``1``)
and non-ASCII numerals ("½ ²3"). The reference here is therefore a ``tokenizers.Tokenizer`` built
from the GGUF's own vocabulary and merges with the original ``tokenizer.json``'s pre-tokenizer,
decoder and model settings (:func:`trained_tokenizer`). transformers' GGUF tokenizer is still
checked: it must equal our tokenizer run with the plain ``gpt2`` pre-tokenizer on every string
(the same BPE), and differ from the trained one only on strings with numerals.

Reference tests need the fetched GGUF and the ``tokenizers``/``transformers`` packages (the
``reference`` extra); the whole file takes about 12 s on a quiet 2-core machine.
"""

from __future__ import annotations

import pickle
import unicodedata

import numpy as np
import pytest
import regex
from llama_fixtures import smollm2_gguf, write_gguf

from conftest import reference
from generator.errors import BuildError
from generator.models import bpe
from generator.models.gguf_io import read_gguf

# ---- without the model ------------------------------------------------------------------------------


def test_gpt2s_byte_map_is_a_bijection_that_keeps_printable_bytes():
    table = bpe.bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert table[ord("A")] == "A" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[0xAD] == "Ń"
    assert all(bpe.unicode_to_bytes()[c] == b for b, c in table.items())


@pytest.mark.parametrize(("text", "pieces"), [
    ("Hello world", ["Hello", " world"]),
    ("a  1", ["a", "  ", "1"]),  # smollm: the digit alone, so both spaces stay together
    ("x 12", ["x", " ", "1", "2"]),
    ("I'm here", ["I", "'m", " here"]),
    ("foo   bar", ["foo", "  ", " bar"]),  # a run before a word gives its last space to the word
    ("½ ²3", ["½", " ", "²", "3"]),
    ("hi!!! ", ["hi", "!!!", " "]),
])
def test_smollms_pre_tokenizer_isolates_numerals_then_applies_gpt2s_expression(text, pieces):
    assert bpe.pre_tokenize(text, "smollm") == pieces
    assert "".join(bpe.pre_tokenize(text, "smollm")) == text


def test_gpt2s_pre_tokenizer_keeps_a_space_with_the_numbers():
    assert bpe.pre_tokenize("a  12", "gpt2") == ["a", " ", " 12"]


def test_merges_go_by_rank_then_leftmost():
    # ids: a=0 b=1 c=2 ab=3 bc=4 abc=5; "bc" outranks "ab", so abc = a + bc, never ab + c
    merges = {(1, 2): (0, 4), (0, 1): (1, 3), (0, 4): (2, 5)}
    assert bpe.merge_symbols([0, 1, 2], merges) == [5]
    assert bpe.merge_symbols([0, 1, 0, 1], merges) == [3, 3]
    assert bpe.merge_symbols([2, 2], merges) == [2, 2]
    long = bpe.merge_symbols([0, 1] * 5000, merges)  # 10,000 symbols: the heap keeps it fast
    assert long == [3] * 5000


def test_the_tiny_tokenizer_reads_specials_merges_and_the_chat_template(tmp_path):
    tokenizer = bpe.tokenizer_from_gguf(read_gguf(write_gguf(tmp_path / "m.gguf")))
    encoding = bpe.encode("<|im_start|>the then", tokenizer)
    assert encoding.tokens == ("<|im_start|>", "t", "he", "Ġthe", "n")
    assert bpe.encode("<|im_start|>", tokenizer, special=False).tokens[:3] == ("<", "|", "i")
    assert bpe.decode(encoding.ids, tokenizer) == "<|im_start|>the then"
    assert bpe.decode(encoding.ids, tokenizer, skip_special=True) == "the then"
    assert bpe.render_chat(tokenizer, [{"role": "user", "content": "Hi"}]) == \
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(BuildError, match="needs a text 'role' and 'content'"):
        bpe.render_chat(tokenizer, [{"role": "user"}])
    copy = pickle.loads(pickle.dumps(tokenizer))  # build workers get it pickled: data only, tables rebuilt
    assert bpe.encode("<|im_start|>the then", copy) == encoding and len(pickle.dumps(tokenizer)) < 10_000


def test_a_broken_chat_template_is_an_error_not_a_traceback(tmp_path):
    gg = read_gguf(write_gguf(tmp_path / "m.gguf", metadata={"tokenizer.chat_template": "{{ raise_exception('no') }}"}))
    with pytest.raises(BuildError, match="the chat template failed: no"):
        bpe.render_chat(bpe.tokenizer_from_gguf(gg), [{"role": "user", "content": "x"}])
    gg = read_gguf(write_gguf(tmp_path / "n.gguf", metadata={"tokenizer.chat_template": "{{ ''.__class__.__mro__ }}"}))
    with pytest.raises(BuildError, match="the chat template failed"):  # the sandbox refuses
        bpe.render_chat(bpe.tokenizer_from_gguf(gg), [{"role": "user", "content": "x"}])


def test_visible_tokens_show_spaces_newlines_and_partial_bytes():
    assert bpe.visible(b" Paris") == "␣Paris"
    assert bpe.visible(b"\n\n\t\r") == "↵↵⇥␍"
    assert bpe.visible("é".encode()) == "é"
    assert bpe.visible("😀".encode()[:2]) == "<0xF0><0x9F>"
    assert bpe.visible(b"\x04") == "\\x04"


# ---- generated strings ---------------------------------------------------------------------------------

# Every code point Python's Unicode tables assign, private-use planes 15-16 left out (their 131,068 code
# points are all one category).
ASSIGNED = [c for c in range(0xF0000) if unicodedata.category(chr(c)) not in ("Cn", "Cs")]


def generated_strings(n: int = 1200, seed: int = 2024) -> list[str]:
    """Seeded strings: English with contractions, code, runs of whitespace, emoji, numerals of many
    scripts, mixed scripts, control characters (some of them bytes the vocabulary lacks), literal
    special tokens, long runs, and random assigned code points."""
    rng = np.random.default_rng(seed)
    words = ["the", "The", "quick", "DON'T", "we'll", "it's", "I'm", "they've", "naïve", "café", "Straße",
             "hello", "world", "tokenizer", "antidisestablishmentarianism", "GPT", "x", "a", "Zürich"]
    code = ["def f(x):\n    return x ** 2  # square", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
            "if a != b and c >= d:\n\tpass", "const f = (x) => x?.y ?? 0;", "SELECT * FROM t WHERE id=42;",
            "<div class=\"a\">&amp;</div>", "x=[1,2,3]\ny = {'k': None}", "#include <stdio.h>\nint main(){}"]
    spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2003", "\x0b", "\x0c", "\x85",
              "\u200b", "\u2028", " \n ", "\t\t", "    "]
    emoji = ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🏳️‍🌈", "1️⃣", "🤖", "🧪✨", "🙂🙃"]
    numerals = ["12345", "3.14159", "1,000,000", "٣٤٥", "४२", "１２", "²³", "½", "Ⅻ", "𝟘𝟙", "①②", "0x1F",
                "2024-12-06", "-7", "10%", "1e-5", "٠١٢", "๓"]
    scripts = ["Ελληνικά", "русский язык", "日本語のテキスト", "한국어", "مرحبا بالعالم", "עברית", "हिन्दी", "ไทย",
               "e\u0301", "Ｆｕｌｌｗｉｄｔｈ", "ﬁ", "ǅ", "İstanbul", "ß", "Ω"]
    controls = ["\x00", "\x04", "\x06", "\x13", "\x14", "\x16", "\x1d", "\x1c", "\x1f", "\x7f", "\ufeff", "\ufffd",
                chr(0x40000), chr(0x9FFFF), chr(0xE0041)]
    specials = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>", "<|im_sta", "<repo_name>"]
    groups = [words, code, spaces, emoji, numerals, scripts, controls, specials]
    out = ["", " ", "a  1", "\n\n1", "½ ²3", "a" * 3000, "9" * 500, " " * 100 + "x"]
    while len(out) < n:
        parts = []
        for _ in range(rng.integers(1, 9)):
            r = rng.random()
            if r < 0.12:
                parts.append("".join(chr(ASSIGNED[i]) for i in rng.integers(len(ASSIGNED), size=rng.integers(1, 6))))
            else:
                group = groups[rng.integers(len(groups))]
                parts.append(group[rng.integers(len(group))])
            if rng.random() < 0.6:
                parts.append(spaces[rng.integers(len(spaces))] if rng.random() < 0.3 else " ")
        out.append("".join(parts))
    return out


def test_the_generated_strings_cover_what_they_promise():
    strings = generated_strings()
    assert len(strings) >= 1000 and len(set(strings)) > 990
    lacking = "[\x04\x06\x13\x14\x16\x1d\U00040000-\U000BFFFF]"  # bytes (or lead bytes) the vocabulary lacks
    for wanted in (r"\p{N}", r"[\p{Han}\p{Hangul}\p{Arabic}\p{Cyrillic}]", r"\p{Extended_Pictographic}", r"\s\s", "<\\|im_", lacking):
        assert sum(bool(regex.search(wanted, s)) for s in strings) > 100, wanted


# ---- against the trained tokenizer ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    return bpe.tokenizer_from_gguf(read_gguf(smollm2_gguf()))


@pytest.fixture(scope="module")
def trained_tokenizer(smollm2_tokenizer):
    """SmolLM2's tokenizer.json rebuilt: the GGUF's vocabulary and merges, the original settings."""
    tokenizers = reference("tokenizers")
    from tokenizers import AddedToken, decoders, models, pre_tokenizers

    tok = smollm2_tokenizer
    model = models.BPE({t: i for i, t in enumerate(tok.tokens)}, list(tok.merges), unk_token=None,
                       fuse_unk=False, byte_fallback=False)
    trained = tokenizers.Tokenizer(model)
    trained.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    trained.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    trained.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, kind in zip(tok.tokens, tok.token_types, strict=True) if kind == bpe.CONTROL])
    return trained


@pytest.fixture(scope="module")
def transformers_gguf_tokenizer():
    transformers = reference("transformers")
    reference("gguf")
    path = smollm2_gguf()
    return transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.mark.reference
def test_token_ids_equal_the_trained_tokenizers_on_1200_generated_strings(smollm2_tokenizer, trained_tokenizer):
    strings = generated_strings()
    differ = [s for s in strings if bpe.encode(s, smollm2_tokenizer).ids != tuple(trained_tokenizer.encode(s, add_special_tokens=False).ids)]
    print(f"{len(strings) - len(differ)} of {len(strings)} generated strings give the same ids as the trained tokenizer")
    assert not differ, [repr(s[:80]) for s in differ[:5]]
    dropped = sum(bpe.encode(s, smollm2_tokenizer).dropped > 0 for s in strings)
    assert dropped > 20  # strings with bytes the vocabulary lacks were among them, and both dropped them


@pytest.mark.reference
def test_decoding_equals_the_trained_tokenizers_also_on_random_ids(smollm2_tokenizer, trained_tokenizer):
    rng = np.random.default_rng(7)
    strings = generated_strings()[:300]
    for s in strings:
        ids = bpe.encode(s, smollm2_tokenizer).ids
        assert bpe.decode(ids, smollm2_tokenizer) == trained_tokenizer.decode(list(ids), skip_special_tokens=False)
        if bpe.encode(s, smollm2_tokenizer).dropped == 0:
            assert bpe.decode(ids, smollm2_tokenizer) == s  # round trip
    for _ in range(300):  # token sequences no text gives: partial UTF-8 everywhere
        ids = [int(i) for i in rng.integers(0, len(smollm2_tokenizer.tokens), size=rng.integers(1, 12))]
        assert bpe.decode(ids, smollm2_tokenizer) == trained_tokenizer.decode(ids, skip_special_tokens=False)


@pytest.mark.reference
def test_the_pre_tokenizer_splits_every_assigned_code_point_as_the_trained_one(trained_tokenizer):
    """Every code point below the private-use planes that Python's Unicode tables assign (14.0 on Python
    3.11), in letters, after a space, beside a digit, doubled: the same pieces. The regex package
    knows later Unicode versions than the tokenizers build (whose Oniguruma stops at 15.1), so code
    points assigned since (new scripts) are letters here and symbols there; none is in this set."""
    table = bpe.bytes_to_unicode()
    pre = trained_tokenizer.pre_tokenizer

    def ours(text: str) -> list[str]:
        return ["".join(table[b] for b in piece.encode()) for piece in bpe.pre_tokenize(text, "smollm")]

    def theirs(text: str) -> list[str]:
        return [piece for piece, _ in pre.pre_tokenize_str(text)]

    def probe(c: str) -> str:
        return f"a{c}b {c}1{c}  {c}\t{c}'s{c}{c}"

    differ = []
    for start in range(0, len(ASSIGNED), 512):
        chunk = [chr(c) for c in ASSIGNED[start:start + 512]]
        text = "".join(probe(c) for c in chunk)
        if ours(text) != theirs(text):
            differ += [hex(ord(c)) for c in chunk if ours(probe(c)) != theirs(probe(c))] or [f"the chunk at {start}"]
    print(f"{len(ASSIGNED):,} code points (Unicode {unicodedata.unidata_version}) split alike")
    assert not differ, differ[:10]


@pytest.mark.reference
def test_transformers_gguf_tokenizer_is_plain_gpt2_and_differs_only_next_to_numerals(smollm2_tokenizer, trained_tokenizer,
                                                                                      transformers_gguf_tokenizer):
    strings = generated_strings()
    as_gpt2 = bpe.BPETokenizer(tokens=smollm2_tokenizer.tokens, token_types=smollm2_tokenizer.token_types,
                               merges=smollm2_tokenizer.merges, pre="gpt2")
    unfaithful = []
    for s in strings:
        theirs = tuple(transformers_gguf_tokenizer(s, add_special_tokens=False).input_ids)
        assert bpe.encode(s, as_gpt2).ids == theirs, repr(s[:80])  # the same BPE, GPT-2's split
        if theirs != tuple(trained_tokenizer.encode(s, add_special_tokens=False).ids):
            unfaithful.append(s)
    print(f"transformers' GGUF tokenizer differs from the trained one on {len(unfaithful)} of {len(strings)} strings, "
          "each with a numeral")
    assert unfaithful and all(regex.search(r"\p{N}", s) for s in unfaithful)


@pytest.mark.reference
def test_the_chat_template_renders_as_transformers_renders_it(smollm2_tokenizer, transformers_gguf_tokenizer):
    conversations = [
        [{"role": "user", "content": "What is the capital of France?"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "2 + 2?"}],
        [{"role": "user", "content": "Ünïcödé 😀 and <|im_end|> inside"}],
    ]
    for messages in conversations:
        for add in (True, False):
            theirs = transformers_gguf_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add)
            assert bpe.render_chat(smollm2_tokenizer, messages, add_generation_prompt=add) == theirs
