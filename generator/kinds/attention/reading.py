"""The spotlight's part of lab.yaml: its ``widget:`` mapping read and checked into a :class:`WidgetSpec`.

Author-facing syntax (in ``lab.yaml``)::

    widget:
      prompt: Click any word to make it the query.        # one line above the widget (required)
      default: {sentence: cat-mat, head: syntax, query: sat}  # optional; defaults to the first
                                                          # sentence, first head, first word
      heads: [syntax, previous, coreference, alignment]   # optional: which built-in heads, in
                                                          # order (default: the first three)
      sentences:                                          # required, at least one
        - id: cat-mat                                     # letters, digits, '-' and '_'; unique
          text: The cat/NOUN sat/VERB on the mat/NOUN     # the words that ask (queries)
          kind: self                                      # self (default) | causal | cross
          label: The cat sat on the mat                   # optional; default: text without tags
          note: One line shown under the sentence.        # optional
          query: sat                                      # optional: the word it opens on (default:
                                                          # the first; `the#2` for a repeated word)
          claims:                                         # optional: what the page relies on
            syntax:
              - sat -> cat, mat (>= 60%)
              - The -> cat
              - the -> mat                                # "The" ≠ "the"; a repeated word: the#2
        - id: translate
          kind: cross
          text: The black/ADJ cat/NOUN sleeps/VERB        # queries
          source: Le/DET chat/NOUN noir/ADJ dort/VERB     # keys and values (cross only, required)
          source_label: French source                     # optional (cross only); default "source"
          claims:
            alignment:
              - black -> noir

Words and tags
    Words are separated by spaces; punctuation at a word's edge is a word of its own.
    Function words of English (the, on, it, didn't, because, too …) are known; every other
    word is tagged ``word/TAG`` with one of ``DET NOUN PRON VERB AUX ADJ ADV ADP CONJ PART
    NUM PUNCT`` (``PROPN`` counts as ``NOUN``). A tag on a known word overrides it. A
    sentence in another language tags all its words. See :mod:`generator.kinds.attention.teaching`.

Claims
    ``Q -> K`` says K gets Q's largest weight; ``Q -> K1, K2`` says K1 and K2 are Q's two
    largest (in any order); ``(>= 60%)`` adds that together they hold at least 60 %. The
    weights are the ÷√d ones of the named head. Words are matched case-sensitively, tags
    left off; a word that occurs more than once is written ``the#2`` (its 2nd occurrence).
    In a cross sentence Q is a word of ``text`` and K a word of ``source``. The build
    computes every claim and fails, at the claim's line, if one does not hold.

Public API: :func:`read_widget` (validate, positioned errors through the
:class:`~generator.source.Reader`), :func:`read_word` and :func:`read_words` (for the
``model:`` section, :mod:`.realmodel`), :func:`find_word`, :func:`parse_claim`. The numbers are
computed, and the claims checked against them, by :mod:`.widget`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from generator.kinds.attention import teaching
from generator.kinds import Diagnostic, Reader, did_you_mean, pickled_as_call

SENTENCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # a sentence id: in URLs and file names
# The claim's optional "(>= 60%)": every \s* sits between literals, so it matches in linear
# time; [0-9], not \d, so that "٧" or "²" is not read as a digit.
_SHARE = re.compile(r"\(\s*>=\s*(?P<share>[0-9]+(?:\.[0-9]+)?)\s*%\s*\)")


@pickled_as_call
@dataclass(frozen=True, slots=True)
class ClaimParts:
    """A claim's pieces as written, with their offsets in the claim's text."""

    query: str
    query_start: int
    keys: str  # "cat, mat" (not yet split)
    keys_start: int
    share: str | None  # "60" of "(>= 60%)"


def parse_claim(text: str) -> ClaimParts | None:
    """``query -> key1, key2 (>= 60%)`` split into its parts, or None when it does not read so.

    Parsed by hand in one pass (a regular expression with a lazy group between optional
    spaces backtracked catastrophically on a long line of spaces)."""
    arrow = text.find("->")
    if arrow < 0:
        return None
    head = text[:arrow]
    query = head.strip()
    if not query or any(c.isspace() or c in ",>" for c in query):
        return None
    keys_from = arrow + 2
    rest = text[keys_from:]
    paren = rest.find("(")
    share = None
    if paren >= 0:
        match = _SHARE.fullmatch(rest[paren:].rstrip())
        if match is None:
            return None
        share = match.group("share")
        rest = rest[:paren]
    if "(" in rest or ")" in rest:
        return None
    keys = rest.strip()
    return ClaimParts(query, len(head) - len(head.lstrip()), keys, keys_from + len(rest) - len(rest.lstrip()), share)


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Claim:
    """``query -> keys (>= min_share)`` in one head of one sentence."""

    head: str
    query: int  # index into the sentence's queries
    keys: tuple[int, ...]  # indexes into its keys: these must be the query's top len(keys)
    min_share: float | None  # e.g. 0.6: the keys' weights must add up to at least this
    text: str  # as written, for messages
    at: Diagnostic  # where it is written; the message is filled in when it fails


@pickled_as_call
@dataclass(frozen=True, slots=True)
class SentenceSpec:
    id: str
    label: str  # shown in the sentence picker
    kind: str  # "self", "causal" or "cross"
    note: str
    query_words: tuple[teaching.Word, ...]
    key_words: tuple[teaching.Word, ...]  # the same words unless cross
    key_label: str  # cross only: what the keys are, e.g. "French source"
    claims: tuple[Claim, ...]
    query: int = 0  # the query word the sentence opens on (its most telling word)

    @property
    def queries(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.query_words)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.key_words)


@pickled_as_call
@dataclass(frozen=True, slots=True)
class WidgetSpec:
    prompt: str
    head_ids: tuple[str, ...]  # built-in heads shown, in display order
    sentences: tuple[SentenceSpec, ...]
    default_sentence: str
    default_head: str
    default_query: int
    # Decimals kept in the page: three show a vector or score faithfully at panel size, and
    # keep weights exact to 0.1 % — finer than the integer percentages the readout shows.
    vector_decimals: int = 3
    weight_decimals: int = 3

    def sentence(self, sentence_id: str) -> SentenceSpec | None:
        return next((s for s in self.sentences if s.id == sentence_id), None)


# ---------------------------------------------------------------------------- reading


def read_widget(reader: Reader, where: tuple) -> WidgetSpec | None:
    """The widget at ``where``, or ``None`` if it is absent or has mistakes.

    Every mistake is recorded on ``reader`` with its file, line and column (a word's own
    column for tagging and claim mistakes); reading goes on to report them all.
    """
    if reader.value(where) is None and where not in reader.doc.value_marks:
        return None
    before = len(reader.diags.items)
    mapping = reader.mapping(where, required=("prompt", "sentences"), optional=("default", "heads"))
    if mapping is None:
        return None
    prompt = reader.string(where + ("prompt",), multiline=False)
    head_ids = _read_heads(reader, where + ("heads",)) if "heads" in mapping else teaching.DEFAULT_HEADS
    sentences: list[SentenceSpec] = []
    first_seen: dict[str, int] = {}
    written = reader.sequence(where + ("sentences",)) or []
    for i, _ in enumerate(written):
        sentence = _read_sentence(reader, where + ("sentences", i), head_ids)
        if sentence is None:
            continue
        if sentence.id in first_seen:
            line, _ = reader.doc.position(where + ("sentences", first_seen[sentence.id], "id"))
            reader.error(where + ("sentences", i, "id"), f"duplicate sentence id {sentence.id!r} (first used on line {line})")
            continue
        first_seen[sentence.id] = i
        sentences.append(sentence)
    written_ids = {v for i in range(len(written))  # (an id written as a list or mapping is reported above)
                   if isinstance(v := reader.value(where + ("sentences", i, "id")), str)}
    default = _read_default(reader, where + ("default",), head_ids, sentences, written_ids) if "default" in mapping else None
    if len(reader.diags.items) > before or prompt is None or not sentences or not head_ids:
        return None
    if default is None:
        default = (sentences[0].id, head_ids[0], sentences[0].query)
    return WidgetSpec(prompt, tuple(head_ids), tuple(sentences), *default)


def _read_heads(reader: Reader, where: tuple) -> tuple[str, ...]:
    heads: list[str] = []
    for i, _ in enumerate(reader.sequence(where) or []):
        head_id = reader.string(where + (i,), multiline=False)
        if head_id is None:
            continue
        if head_id not in teaching.HEAD_IDS:
            reader.error(where + (i,), f"unknown head {head_id!r}{did_you_mean(head_id, teaching.HEAD_IDS)}; "
                                       f"heads: {', '.join(teaching.HEAD_IDS)}")
        elif head_id in heads:
            reader.error(where + (i,), f"head {head_id!r} is listed twice")
        else:
            heads.append(head_id)
    return tuple(heads)


def _read_sentence(reader: Reader, where: tuple, head_ids: Sequence[str]) -> SentenceSpec | None:
    before = len(reader.diags.items)
    mapping = reader.mapping(where, required=("id", "text"),
                             optional=("kind", "label", "note", "source", "source_label", "claims", "query"))
    if mapping is None:
        return None
    sentence_id = reader.string(where + ("id",), multiline=False)
    if sentence_id is not None and not SENTENCE_ID.fullmatch(sentence_id):
        reader.error(where + ("id",), f"sentence id {sentence_id!r} may use only letters, digits, '-' and '_'")
    kind = reader.string(where + ("kind",), multiline=False) if "kind" in mapping else "self"
    if kind is not None and kind not in teaching.KINDS:
        reader.error(where + ("kind",), f"unknown kind {kind!r}{did_you_mean(kind, teaching.KINDS)}; "
                                        f"kinds: {', '.join(teaching.KINDS)}")
        kind = None
    for key in ("source", "source_label"):
        if key in mapping and kind in ("self", "causal"):
            reader.error(where + (key,), f"{key!r} is only for kind: cross (this sentence is {kind})", key=True)
    if kind == "cross" and "source" not in mapping:
        reader.error(where, "missing required key 'source' in a kind: cross sentence (the words the queries read)")
    label: str | None = reader.string(where + ("label",), multiline=False) if "label" in mapping else None
    note = reader.string(where + ("note",), multiline=False) if "note" in mapping else ""
    query_words, text = read_words(reader, where + ("text",))
    key_words, source = query_words, None
    key_label: str | None = ""
    if kind == "cross" and "source" in mapping:
        key_words, source = read_words(reader, where + ("source",))
        key_label = (reader.string(where + ("source_label",), multiline=False)
                     if "source_label" in mapping else "source")
    query = 0
    if "query" in mapping and query_words:
        written = reader.string(where + ("query",), multiline=False)
        found = read_word(reader, where + ("query",), written, [w.text for w in query_words]) if written else None
        query = found if found is not None else 0
    claims: list[Claim] = []
    if "claims" in mapping and query_words and key_words and kind is not None:
        claims = _read_claims(reader, where + ("claims",), head_ids, query_words, key_words, kind == "cross")
    if (len(reader.diags.items) > before or sentence_id is None or kind is None or note is None
            or key_label is None or text is None or query_words is None or key_words is None):
        return None
    if label is None:
        label = _untagged(text, query_words)
        if source is not None:
            label = f"{_untagged(source, key_words)} → {label}"
    return SentenceSpec(sentence_id, label, kind, note, query_words, key_words, key_label, tuple(claims), query)


def read_words(reader: Reader, where: tuple) -> tuple[tuple[teaching.Word, ...] | None, str | None]:
    """The tagged sentence at ``where`` as the model's words, and its text as written; (None, text)
    after reporting each tagging mistake at its word's line and column, (None, None) without a text."""
    text = reader.string(where)
    if text is None:
        return None, None
    try:
        return teaching.parse_sentence(text), text
    except teaching.TaggingError as exc:
        for problem in exc.problems:
            token_start = problem.offset - problem.at
            line, column = _locate(reader, where, text, problem.written, token_start)
            reader.error_at(line, column + problem.at, problem.message)
        return None, text


def _locate(reader: Reader, where: tuple, text: str, needle: str, start: int) -> tuple[int, int]:
    """File position of the ``needle`` that starts at ``start`` in the value ``text``."""
    occurrence, at = 0, -1
    while True:
        at = text.find(needle, at + 1)
        if at < 0 or at > start:
            break
        occurrence += 1
    return reader.doc.locate(where, needle, max(occurrence, 1))


def _untagged(text: str, words: Sequence[teaching.Word]) -> str:
    """``text`` with every ``/TAG`` removed and its spacing tidied."""
    cuts = [(w.start + len(w.text), w.start + len(w.written)) for w in words if w.tagged]
    pieces, last = [], 0
    for begin, end in cuts:
        pieces.append(text[last:begin])
        last = end
    pieces.append(text[last:])
    return " ".join("".join(pieces).split())


def _read_claims(reader: Reader, where: tuple, head_ids: Sequence[str], query_words, key_words,
                 cross: bool) -> list[Claim]:
    mapping = reader.value(where)
    if not isinstance(mapping, dict):
        reader.mapping(where)  # reports what it is instead
        return []
    claims: list[Claim] = []
    for head_id in mapping:
        if head_id not in head_ids:
            known = head_id in teaching.HEAD_IDS
            reader.error(where + (head_id,),
                         f"head {head_id!r} is not shown in this widget (heads: {', '.join(head_ids)})" if known else
                         f"unknown head {head_id!r}{did_you_mean(head_id, head_ids)}; heads: {', '.join(head_ids)}",
                         key=True)
            continue
        for c, _ in enumerate(reader.sequence(where + (head_id,)) or []):
            claim = _read_claim(reader, where + (head_id, c), head_id, query_words, key_words, cross)
            if claim is not None:
                claims.append(claim)
    return claims


def _read_claim(reader: Reader, where: tuple, head_id: str, query_words, key_words, cross: bool) -> Claim | None:
    text = reader.string(where, multiline=False)
    if text is None:
        return None
    parts = parse_claim(text)
    keys_text = parts.keys if parts else ""
    if parts is None or not keys_text or any(not k.strip() or " " in k.strip() for k in keys_text.split(",")):
        reader.error(where, f"cannot read the claim {text!r}: write 'query -> key', 'query -> key1, key2' "
                            "or 'query -> key1, key2 (>= 60%)'")
        return None
    before = len(reader.diags.items)
    query = _claim_word(reader, where, text, parts.query_start, parts.query, query_words,
                        "the queries" if cross else "the sentence")
    keys: list[int] = []
    offset = parts.keys_start
    for piece in keys_text.split(","):
        word = piece.strip()
        index = _claim_word(reader, where, text, offset + piece.index(word), word, key_words,
                            "the source" if cross else "the sentence")
        offset += len(piece) + 1
        if index is None:
            continue
        if index in keys:
            reader.error(where, f"claim {text!r} names {word!r} twice")
        keys.append(index)
    share = None
    if parts.share is not None:
        share = float(parts.share) / 100
        if not 0 < share <= 1:
            reader.error(where, f"the share in claim {text!r} must be between 0% and 100%")
    if len(reader.diags.items) > before or query is None:
        return None
    return Claim(head_id, query, tuple(keys), share, text, reader.doc.diagnostic(where, ""))


def find_word(written: str, words: Sequence[str], among: str = "the sentence") -> int | str:
    """Index of ``written`` — a word, or ``word#n`` for its n-th occurrence — in ``words``, or
    the message saying why it names no single word. Shared by claims, quiz word questions and
    model relations, so an author meets one syntax and one wording everywhere."""
    base, hash_, nth = written.partition("#")
    hits = [i for i, w in enumerate(words) if w == base]
    if not hits:
        return f"no word {base!r} in {among}{did_you_mean(base, words)}; words: {' '.join(words)}"
    if hash_:
        if not (nth.isascii() and nth.isdigit()) or not 1 <= int(nth) <= len(hits):
            return f"{written!r}: {among} has {len(hits)} {base!r}; write {base}#1 … {base}#{len(hits)}"
        return hits[int(nth) - 1]
    if len(hits) > 1:
        return f"{base!r} occurs {len(hits)} times in {among}; say which with {base}#1 … {base}#{len(hits)}"
    return hits[0]


def read_word(reader: Reader, where: tuple, written: str, words: Sequence[str]) -> int | None:
    """:func:`find_word` for the value at ``where``: the index, or an error there and None."""
    found = find_word(written, words)
    if isinstance(found, str):
        reader.error(where, found)
        return None
    return found


def _claim_word(reader: Reader, where: tuple, text: str, start: int, written: str,
                words: Sequence[teaching.Word], among: str) -> int | None:
    """Index of ``written`` in ``words``; an error at the word in the claim otherwise."""
    found = find_word(written, [w.text for w in words], among)
    if isinstance(found, str):
        line, column = _locate(reader, where, text, written, start)
        reader.error_at(line, column, found)
        return None
    return found


def _read_default(reader: Reader, where: tuple, head_ids: Sequence[str], sentences: Sequence[SentenceSpec],
                  written_ids: set) -> tuple[str, str, int] | None:
    """The default view. ``written_ids`` holds every sentence id in the file, including those of
    sentences with mistakes: naming one of those is not a mistake of its own."""
    mapping = reader.mapping(where, optional=("sentence", "head", "query"))
    if mapping is None or not sentences:
        return None
    sentence: SentenceSpec | None = sentences[0]
    if "sentence" in mapping:
        sentence_id = reader.string(where + ("sentence",), multiline=False)
        sentence = next((s for s in sentences if s.id == sentence_id), None)
        if sentence_id is not None and sentence is None and sentence_id not in written_ids:
            ids = [s.id for s in sentences]
            reader.error(where + ("sentence",), f"unknown sentence {sentence_id!r}{did_you_mean(sentence_id, ids)}; "
                                                f"sentences: {', '.join(ids)}")
    head_id = reader.string(where + ("head",), multiline=False) if "head" in mapping else (head_ids or ("",))[0]
    if head_id is not None and head_ids and head_id not in head_ids:
        reader.error(where + ("head",), f"unknown head {head_id!r}{did_you_mean(head_id, head_ids)}; "
                                        f"heads: {', '.join(head_ids)}")
        head_id = None
    query: int | None = sentence.query if sentence is not None else 0
    if "query" in mapping and sentence is not None:
        written = reader.string(where + ("query",), multiline=False)
        query = None
        if written is not None:
            query = _claim_word(reader, where + ("query",), written, 0, written, sentence.query_words,
                                f"sentence {sentence.id!r}")
    if sentence is None or head_id is None or query is None:
        return None
    return sentence.id, head_id, query


# ---------------------------------------------------------------------------- computing
