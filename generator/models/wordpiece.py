"""WordPiece tokenisation exactly as BERT's ``BertTokenizer`` does it, in plain Python.

The pipeline (the classic Python ``BasicTokenizer`` + ``WordpieceTokenizer`` of
Hugging Face transformers, itself a port of Google's ``tokenization.py``):

1. clean: drop NUL, U+FFFD and control characters (Unicode C*, except tab/newline/CR);
   turn whitespace (space, tab, newline, CR, Unicode Zs) into a plain space;
2. put spaces around every CJK ideograph, so each becomes its own word;
3. NFC-normalise, split on whitespace (Python's ``str.split``);
4. per whitespace token: lower-case, then NFD and drop combining marks (Mn) — for an
   uncased vocabulary; a cased one keeps both unless asked;
5. split off every punctuation character as its own word (Unicode P* plus the ASCII
   non-alphanumeric ranges 33–47, 58–64, 91–96, 123–126, so ``$``, ``^``, `````, ``+``... too);
6. per word: greedy longest-match-first against the vocabulary, continuations prefixed
   ``##``; a word longer than ``max_input_chars_per_word`` (100) or with no complete
   match becomes a single ``[UNK]``;
7. ``[CLS]`` first, ``[SEP]`` last.

The words of step 5 are what :attr:`Encoding.word_ids` points into, so word pieces can
be merged back into words ("didn't" is three words, ``did ' t``, as BERT sees it).

One deliberate difference: a literal ``[CLS]``/``[SEP]``/``[MASK]`` typed in the text is
ordinary text here (``[``, ``cl``, ``##s``, ``]``), where transformers would treat it as the
special token. Authored sentences are text, never control sequences.
"""

from __future__ import annotations

import io
import json
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.errors import BuildError, display_path
from generator.filepolicy import read_limited

# Google's BERT uses 100; beyond it a "word" is almost certainly not language (a URL, a hash).
MAX_INPUT_CHARS_PER_WORD = 100
# A vocabulary is read whole, and a page may load it whole: at most a million pieces (the most a
# checkpoint's config may name, bert.CONFIG_LIMITS) in at most 16 MB. Multilingual BERT, the largest
# WordPiece vocabulary in common use, is 119,547 pieces in 0.9 MB; MiniLM's is 30,522 in 0.2 MB.
MAX_VOCAB_PIECES = 1_000_000
MAX_VOCAB_BYTES = 16_000_000
MAX_SETTINGS_BYTES = 1_000_000  # tokenizer_config.json: a few switches (Hugging Face's add a token table)


@dataclass(frozen=True)
class WordPieceTokenizer:
    """A vocabulary and the switches of BERT's tokenizer (defaults: uncased BERT)."""

    vocab: Mapping[str, int]  # piece -> id; "##" marks a continuation piece
    lower_case: bool = True  # uncased checkpoints (MiniLM, bert-base-uncased) were trained lower-cased
    strip_accents: bool | None = None  # None: strip exactly when lower-casing, as BERT does
    tokenize_chinese_chars: bool = True  # CJK ideographs are words on their own
    unk_token: str = "[UNK]"
    cls_token: str = "[CLS]"
    sep_token: str = "[SEP]"
    max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD


@dataclass(frozen=True)
class Encoding:
    """One tokenised sentence. Piece sequences include ``[CLS]`` and ``[SEP]``."""

    text: str
    tokens: tuple[str, ...]  # word pieces, e.g. ("[CLS]", "play", "##ing", "[SEP]")
    ids: tuple[int, ...]  # vocabulary ids of ``tokens``
    word_ids: tuple[int | None, ...]  # per piece: index into ``words``; None for [CLS]/[SEP]
    words: tuple[str, ...]  # the words as the model sees them (lower-cased, accents stripped)
    source_words: tuple[str, ...]  # the same words as written in ``text``, control characters dropped; best effort
    word_spans: tuple[tuple[int, int] | None, ...]  # [start, end) of each word in ``text``; None if unaligned


# ---- vocabulary ---------------------------------------------------------------------------


def load_vocab(path: Path, inside: Path | None = None) -> dict[str, int]:
    """``vocab.txt``: one piece per line, id = line number (a repeated piece keeps its last id).

    Read under the file policy (:func:`generator.filepolicy.read_limited`: no FIFO or device, no
    link out of ``inside``, the size compared before reading). Raises :class:`BuildError` naming
    the file if it is missing, refused, over :data:`MAX_VOCAB_BYTES` or :data:`MAX_VOCAB_PIECES`,
    not UTF-8 or empty.
    """
    path = Path(path)
    raw = read_limited(path, inside, MAX_VOCAB_BYTES, what="a vocabulary")
    try:  # universal newlines, as transformers reads it
        lines = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8").readlines()
    except UnicodeDecodeError as exc:
        raise BuildError(f"vocabulary is not valid UTF-8 (byte offset {exc.start})", path=display_path(path)) from None
    if len(lines) > MAX_VOCAB_PIECES:
        raise BuildError(f"vocabulary has {len(lines):,} lines; at most {MAX_VOCAB_PIECES:,} pieces are read",
                         path=display_path(path))
    vocab = {line.rstrip("\n"): index for index, line in enumerate(lines)}
    if not vocab:
        raise BuildError("vocabulary file is empty", path=display_path(path))
    return vocab


def load_tokenizer(model_dir: Path, inside: Path | None = None) -> WordPieceTokenizer:
    """The tokenizer of a Hugging Face folder: ``vocab.txt`` plus, if present, the switches
    ``do_lower_case``, ``strip_accents`` and ``tokenize_chinese_chars`` of ``tokenizer_config.json``.
    Both are read under the file policy, with links followed only while they stay inside ``inside``.

    Raises :class:`BuildError` naming the file for a missing/bad vocabulary, an unreadable
    ``tokenizer_config.json``, or a vocabulary lacking ``[CLS]``, ``[SEP]`` or ``[UNK]``.
    """
    model_dir = Path(model_dir)
    vocab_path = model_dir / "vocab.txt"
    vocab = load_vocab(vocab_path, inside)
    settings: dict = {}
    config_path = model_dir / "tokenizer_config.json"
    if os.path.lexists(config_path):
        raw = read_limited(config_path, inside, MAX_SETTINGS_BYTES, what="tokenizer settings")
        try:
            settings = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # ValueError: also an int of 5,000 digits
            raise BuildError(f"cannot read tokenizer settings: {exc}", path=display_path(config_path)) from None
        if not isinstance(settings, dict):
            raise BuildError("tokenizer settings must be a JSON object", path=display_path(config_path))
    for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars"):
        value = settings.get(key)
        if value is not None and not isinstance(value, bool):  # "false" would read as true
            raise BuildError(f"{key!r} must be true, false or null, not {value!r}", path=display_path(config_path))
    tokenizer = WordPieceTokenizer(
        vocab=vocab,
        lower_case=settings.get("do_lower_case", True) is not False,
        strip_accents=settings.get("strip_accents"),
        tokenize_chinese_chars=settings.get("tokenize_chinese_chars", True) is not False,
    )
    missing = [t for t in (tokenizer.cls_token, tokenizer.sep_token, tokenizer.unk_token) if t not in vocab]
    if missing:
        raise BuildError(f"vocabulary lacks the special token(s) {', '.join(missing)}", path=display_path(vocab_path))
    return tokenizer


# ---- character classes (as BERT defines them) ----------------------------------------------


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, CR, or any Unicode space separator (Zs)."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """Any Unicode "other" (C*) character except tab, newline and CR (those are whitespace)."""
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*) or any ASCII character that is neither a letter, a digit nor a space."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_chinese_char(char: str) -> bool:
    """A CJK Unified Ideograph (the blocks Google's BERT lists; not Hangul, kana or CJK punctuation)."""
    cp = ord(char)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


# ---- the basic tokenizer --------------------------------------------------------------------


def clean_text(text: str) -> str:
    """Drop NUL, U+FFFD and control characters; every whitespace character becomes a space."""
    return "".join(
        " " if is_whitespace(c) else c for c in text if not (c == "\x00" or c == "\ufffd" or is_control(c))
    )


def _normalise_token(token: str, tokenizer: WordPieceTokenizer) -> str:
    """Step 4: lower-case and/or strip accents (NFD, drop Mn) one whitespace token."""
    strip = tokenizer.strip_accents if tokenizer.strip_accents is not None else tokenizer.lower_case
    if tokenizer.lower_case:
        token = token.lower()
    if strip:
        token = "".join(c for c in unicodedata.normalize("NFD", token) if unicodedata.category(c) != "Mn")
    return token


def _split_on_punctuation(token: str) -> list[str]:
    """``"didn't"`` -> ``["didn", "'", "t"]``: each punctuation character is a word of its own."""
    words: list[str] = []
    start_new = True
    for c in token:
        if is_punctuation(c):
            words.append(c)
            start_new = True
        else:
            if start_new:
                words.append("")
            start_new = False
            words[-1] += c
    return words


def basic_tokenize(text: str, tokenizer: WordPieceTokenizer) -> list[str]:
    """Steps 1–5 of the module docstring: the words BERT sees, in order."""
    text = clean_text(text)
    if tokenizer.tokenize_chinese_chars:
        text = "".join(f" {c} " if is_chinese_char(c) else c for c in text)
    text = unicodedata.normalize("NFC", text)
    words: list[str] = []
    for token in text.split():
        words.extend(_split_on_punctuation(_normalise_token(token, tokenizer)))
    # transformers re-splits on whitespace here; lower-casing/NFD can expose new spaces only
    # in pathological input, and splitting again keeps us identical there too.
    return " ".join(words).split()


def wordpiece(word: str, tokenizer: WordPieceTokenizer) -> list[str]:
    """Step 6: greedy longest-match-first pieces of one word, or ``[unk_token]``."""
    if len(word) > tokenizer.max_input_chars_per_word:
        return [tokenizer.unk_token]
    pieces: list[str] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in tokenizer.vocab:
                pieces.append(piece)
                start = end
                break
        else:  # no prefix of the rest is in the vocabulary
            return [tokenizer.unk_token]
    return pieces


# ---- locating words in the original text (display only) ------------------------------------

# The exact search for a word the per-character walk cannot place is quadratic in the run it
# tries, so it is tried only for words this short (longer ones stay unaligned): a word's span then
# costs at most a constant number of normalised characters, and a whole text a constant times its
# length (the tokens lab's test counts them).
EXACT_SEARCH_MAX_CHARS = 16


def _word_spans(text: str, words: list[str], tokenizer: WordPieceTokenizer,
                steps: list[int] | None = None) -> list[tuple[int, int] | None]:
    """Where each word stands in ``text``: for each word, in order, the shortest substring
    from the cursor that the pipeline normalises to exactly that word, extended over any
    combining marks that follow (the accent of "café" written as e + U+0301 stays with it).

    Display only: the tokens themselves never depend on it. A word that cannot be aligned
    (a normalisation that does not work character by character) gets None.

    Linear in the text: each code point is normalised alone once (:func:`_spans_walk` joins
    those pieces until they spell the word, then checks the whole run once); only a word of at
    most :data:`EXACT_SEARCH_MAX_CHARS` that the walk cannot place is searched for exactly, run
    by run, within 4 × its length + 8 code points. ``steps``, if given, counts the code points
    normalised (``steps[0]``), the algorithm's unit of work.
    """
    count = steps if steps is not None else [0]
    cache: dict[str, str] = {}

    def norm(s: str) -> str:
        count[0] += len(s)
        return _normalise_token(unicodedata.normalize("NFC", clean_text(s)), tokenizer)

    def alone(i: int) -> str:  # one code point normalised by itself, each distinct one once
        c = text[i]
        if c not in cache:
            cache[c] = norm(c)
        else:
            count[0] += 1
        return cache[c]

    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for word in words:
        # skip what produces no word characters: whitespace, control chars, stray marks
        while cursor < len(text) and alone(cursor).strip() == "":
            cursor += 1
        end = _spans_walk(text, word, cursor, alone)
        if end is not None and norm(text[cursor:end]) != word:
            end = None
        if end is None and len(word) <= EXACT_SEARCH_MAX_CHARS:
            end = _spans_exact(text, word, cursor, norm)
        if end is None:
            spans.append(None)
            continue
        spans.append((cursor, end))
        cursor = end
    return spans


def _spans_walk(text: str, word: str, cursor: int, alone) -> int | None:
    """The end of ``word`` from ``cursor`` when the code points, each normalised alone, spell it
    exactly (then over the marks that follow and normalise to nothing); None where they do not."""
    end, made = cursor, 0
    while made < len(word) and end < len(text):
        piece = alone(end)
        if word[made:made + len(piece)] != piece:
            return None
        made += len(piece)
        end += 1
    if made != len(word):
        return None
    while end < len(text) and unicodedata.category(text[end]).startswith("M") and alone(end) == "":
        end += 1
    return end


def _spans_exact(text: str, word: str, cursor: int, norm) -> int | None:
    """The end of the shortest run from ``cursor`` that normalises to ``word`` as a whole, within
    4 × its length + 8 code points, extended over marks that keep it so; None if there is none."""
    limit = min(len(text), cursor + 4 * len(word) + 8)  # generous: marks normalise to nothing
    end = next((e for e in range(cursor + 1, limit + 1) if norm(text[cursor:e]) == word), None)
    if end is None:
        return None
    while end < len(text) and unicodedata.category(text[end]).startswith("M") and norm(text[cursor : end + 1]) == word:
        end += 1
    return end


# ---- the whole tokenizer ---------------------------------------------------------------------


def encode(text: str, tokenizer: WordPieceTokenizer) -> Encoding:
    """Tokenise one sentence: ``[CLS]``, the word pieces of every word, ``[SEP]``.

    Pure and total: any string gives an encoding (an empty one gives ``[CLS] [SEP]``).
    """
    words = basic_tokenize(text, tokenizer)
    tokens: list[str] = [tokenizer.cls_token]
    word_ids: list[int | None] = [None]
    for index, word in enumerate(words):
        pieces = wordpiece(word, tokenizer)
        tokens.extend(pieces)
        word_ids.extend([index] * len(pieces))
    tokens.append(tokenizer.sep_token)
    word_ids.append(None)
    unk = tokenizer.vocab.get(tokenizer.unk_token, 0)
    spans = _word_spans(text, words, tokenizer)
    return Encoding(
        text=text,
        tokens=tuple(tokens),
        ids=tuple(tokenizer.vocab.get(t, unk) for t in tokens),
        word_ids=tuple(word_ids),
        words=tuple(words),
        source_words=tuple(clean_text(text[s[0] : s[1]]) if s else w for w, s in zip(words, spans)),
        word_spans=tuple(spans),
    )
