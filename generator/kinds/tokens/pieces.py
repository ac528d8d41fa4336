"""What the tokens lab computes at build, all with :mod:`generator.models.wordpiece` — the
tokenizer the page runs as ``static/wordpiece.js`` (:mod:`generator.runtime`), so that what the
page shows before the learner types and what it computes after are the same tokenizer's answers.

Counts, as the page states them:

* characters — code points of the text as written;
* words — the whitespace-separated runs of the text after cleaning (``clean_text(text).split()``),
  what a reader calls words: "didn't" is one word, a sentence of Chinese without spaces is one;
* pieces — the word pieces, without ``[CLS]`` and ``[SEP]``.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from generator.models.wordpiece import WordPieceTokenizer, basic_tokenize, clean_text, encode, wordpiece


@dataclass(frozen=True)
class Counted:
    """One text, tokenized: its pieces (no [CLS]/[SEP]), their ids, which BERT word each is of."""

    text: str
    pieces: tuple[str, ...]
    ids: tuple[int, ...]
    word_ids: tuple[int, ...]
    words: tuple[str, ...]  # BERT's words (punctuation split off), what the pieces are made of
    chars: int
    spaced_words: int  # whitespace-separated words

    @property
    def per_word(self) -> float:
        return len(self.pieces) / self.spaced_words if self.spaced_words else 0.0

    def is_unknown(self) -> bool:
        return self.pieces == ("[UNK]",)


def count(text: str, tokenizer: WordPieceTokenizer) -> Counted:
    enc = encode(text, tokenizer)
    inner = slice(1, len(enc.tokens) - 1)
    return Counted(text, enc.tokens[inner], enc.ids[inner], tuple(int(w) for w in enc.word_ids[inner]), enc.words,
                   len(text), len(clean_text(text).split()))


def search(word: str, tokenizer: WordPieceTokenizer) -> dict:
    """The greedy longest-match-first search on one word, every prefix it looks up, in the shape of
    ``wp.search`` in ``static/wordpiece.js``: ``{word, pieces, tries: [{start, end, piece, found}],
    tooLong, unknown}``. Its pieces are ``wordpiece.wordpiece``'s (a test checks it)."""
    result = {"word": word, "pieces": [], "tries": [], "tooLong": False, "unknown": False}
    if len(word) > tokenizer.max_input_chars_per_word:
        result.update(pieces=[tokenizer.unk_token], tooLong=True)
        return result
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = ("##" if start else "") + word[start:end]
            found = piece in tokenizer.vocab
            result["tries"].append({"start": start, "end": end, "piece": piece, "found": found})
            if found:
                result["pieces"].append(piece)
                start = end
                break
        else:
            result.update(pieces=[tokenizer.unk_token], unknown=True)
            return result
    assert result["pieces"] == wordpiece(word, tokenizer)
    return result


def steps(word: str, tokenizer: WordPieceTokenizer) -> dict:
    """Step by step for one word as written: the normalisation (lower case, accents stripped,
    punctuation split off) and the search on each word it gives."""
    nfc = unicodedata.normalize("NFC", clean_text(word)).strip()
    lowered = nfc.lower() if tokenizer.lower_case else nfc
    strip = tokenizer.strip_accents if tokenizer.strip_accents is not None else tokenizer.lower_case
    stripped = "".join(c for c in unicodedata.normalize("NFD", lowered) if unicodedata.category(c) != "Mn") \
        if strip else lowered
    words = basic_tokenize(word, tokenizer)
    return {"written": word, "lowered": lowered, "stripped": stripped, "words": words,
            "searches": [search(w, tokenizer) for w in words]}


def default_word(text: str, tokenizer: WordPieceTokenizer) -> str:
    """The word of ``text`` that step by step starts on, as written: the first of the words split
    into the most pieces."""
    enc = encode(text, tokenizer)
    if not enc.words:
        return ""
    best = max(range(len(enc.words)), key=lambda w: (enc.word_ids.count(w), -w))
    return enc.source_words[best]


def ratio_text(x: float) -> str:
    """A ratio as the page writes it: 1.25, 2, 0.5."""
    return f"{x:.2f}".rstrip("0").rstrip(".")
