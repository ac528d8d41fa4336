"""Reading the tokens kind's part of lab.yaml (the syntax is in the package's docstring): the
vocabulary's bundle, the examples, the claims, each checked against the real tokenizer as it is
read, every mistake at its line and column with what the tokenizer computed."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from generator.kinds import Reader, SiteError, did_you_mean
from generator.kinds.tokens.pieces import Counted, count, default_word, ratio_text
from generator.kinds.tokens import bytelevel, vocabulary

MIN_EXAMPLES, MAX_EXAMPLES = 2, 8
MAX_TEXT = 2000  # code points of one example, of the starting text or of a claim's text: the page embeds them
# The page loads the whole vocabulary when the learner first types: multilingual BERT's 119,547
# pieces are a 2 MB script; twice that is the most a tokens lab asks a learner to download.
MAX_PIECES = 250_000
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_QUOTED = r'"(?P<{0}>[^"]+)"'
_HAS = re.compile(_QUOTED.format("a") + r"\s+has\s+(?P<n>\d+)\s+pieces?$")
_UNK = re.compile(_QUOTED.format("a") + r"\s+is\s+\[UNK\]$")
_IS = re.compile(_QUOTED.format("a") + r"\s+is\s+(?P<pieces>\S+(?:\s+\S+)*)$")
_PER_WORD = re.compile(_QUOTED.format("a") + r"\s+needs\s+(?P<cmp>more|fewer)\s+pieces\s+per\s+word\s+than\s+"
                       + _QUOTED.format("b") + "$")
_MORE = re.compile(_QUOTED.format("a") + r"\s+needs\s+(?P<cmp>more|fewer)\s+pieces\s+than\s+" + _QUOTED.format("b") + "$")
CLAIM_HELP = ("write '\"unhappiness\" has 3 pieces', '\"unhappiness\" is un ##ha ##pp ##iness', '\"😀\" is [UNK]', "
              "'\"fr-greeting\" needs more pieces than \"en-greeting\"' or '\"code\" needs more pieces per word "
              "than \"en-prose\"' (a quoted example id stands for its text)")


@dataclass(frozen=True)
class Example:
    id: str
    text: str
    note: str
    same_as: str = ""  # the id of an example that says the same in another language: "why it matters" compares


@dataclass(frozen=True)
class TokensSpec:
    vocabulary: str  # the vocabulary's folder (a model bundle or a plain vocab.txt folder), absolute
    written: str  # as lab.yaml writes it
    prompt: str
    text: str  # what "Your text" starts with
    word: str  # what step by step starts on
    examples: tuple[Example, ...]
    bpe: str = ""  # the model whose byte-level BPE the page compares with (store.MODELS), or none
    bpe_gguf: str = ""  # its GGUF as fetched, or "" when it is not: WordPiece only
    content: Path | None = None  # the site's content folder: links in the vocabulary's folder may lead within it

    def example(self, example_id: str) -> Example | None:
        return next((e for e in self.examples if e.id == example_id), None)

    def tokenizer(self):
        return vocabulary.tokenizer(Path(self.vocabulary), self.content)

    def counter(self, which: str = "wordpiece"):
        """The function that counts a text's pieces with the named tokenizer (``bpe`` needs
        ``bpe_gguf``)."""
        return _counter(bytelevel.tokenizer(self.bpe_gguf) if which == "bpe" else self.tokenizer(), which)


def _counter(tok, which: str = "wordpiece"):
    if which == "bpe":
        return lambda text: bytelevel.count(text, tok)
    return lambda text: count(text, tok)


def describe(c: Counted, name: str) -> str:
    """One text's pieces in words, e.g. '"unhappiness" is 3 pieces: un ##hap ##piness'."""
    shown = " ".join(c.pieces) if len(c.pieces) <= 24 else " ".join(c.pieces[:24]) + " …"
    return f"{name} is {len(c.pieces)} piece{'s' * (len(c.pieces) != 1)}: {shown}"


def _ref(spec_examples: dict[str, str], ref: str) -> tuple[str, str]:
    """The text a quoted reference stands for (an example id, else the text itself) and its name."""
    if ref in spec_examples:
        return spec_examples[ref], f"example {ref!r}"
    return ref, f'"{ref}"'


def check_claim(text: str, examples: dict[str, str], tokenizer) -> tuple[bool | None, str]:
    """(True, "") for a true claim; (False, the computed truth) for a false one; (None, why) for one
    that cannot be read. ``tokenizer`` is WordPiece's, or a function from a text to its
    :class:`Counted` (:meth:`TokensSpec.counter`)."""
    tokenizer = tokenizer if callable(tokenizer) else _counter(tokenizer)
    text = " ".join(text.split())
    if m := _MORE.fullmatch(text):
        (ta, na), (tb, nb) = _ref(examples, m.group("a")), _ref(examples, m.group("b"))
        ca, cb = tokenizer(ta), tokenizer(tb)
        ok = len(ca.pieces) > len(cb.pieces) if m.group("cmp") == "more" else len(ca.pieces) < len(cb.pieces)
        return ok, f"{na} has {len(ca.pieces)} pieces, {nb} {len(cb.pieces)}"
    if m := _PER_WORD.fullmatch(text):
        (ta, na), (tb, nb) = _ref(examples, m.group("a")), _ref(examples, m.group("b"))
        ca, cb = tokenizer(ta), tokenizer(tb)
        if not ca.spaced_words or not cb.spaced_words:
            return None, "a text with no words has no pieces per word"
        ok = ca.per_word > cb.per_word if m.group("cmp") == "more" else ca.per_word < cb.per_word
        return ok, (f"{na} has {len(ca.pieces)} pieces for {ca.spaced_words} words ({ratio_text(ca.per_word)} per "
                    f"word), {nb} {len(cb.pieces)} for {cb.spaced_words} ({ratio_text(cb.per_word)} per word)")
    if m := _HAS.fullmatch(text):
        t, name = _ref(examples, m.group("a"))
        c = tokenizer(t)
        digits = m.group("n").lstrip("0") or "0"  # thousands of digits would not become an int
        return len(digits) <= 18 and len(c.pieces) == int(digits), describe(c, name)
    if m := _UNK.fullmatch(text):
        t, name = _ref(examples, m.group("a"))
        c = tokenizer(t)
        return c.is_unknown(), describe(c, name)
    if m := _IS.fullmatch(text):
        t, name = _ref(examples, m.group("a"))
        c = tokenizer(t)
        return c.pieces == tuple(m.group("pieces").split()), describe(c, name)
    return None, f"cannot read the claim {text!r}: {CLAIM_HELP}"


def _text(reader: Reader, where: tuple, what: str) -> str | None:
    text = reader.string(where)
    if text is not None and not text.strip():
        reader.error(where, f"{what} is empty")
        return None
    if text is not None and len(text) > MAX_TEXT:
        reader.error(where, f"{what} is {len(text)} characters; at most {MAX_TEXT} fit the page")
        return None
    return text.strip() if text is not None else None


def _vocabulary(reader: Reader, where: tuple, lab_dir: Path):
    folder = reader.folder(where, lab_dir, "vocabulary")  # within content/: the page publishes it
    if folder is None:
        return None, None
    written = reader.value(where)
    if not (vocabulary.is_bundle(folder) or os.path.lexists(folder / "vocab.txt")):
        reader.error(where, f"no vocabulary at {written!r}: name a model bundle folder or a folder with a vocab.txt, "
                            f"relative to the lab's folder (e.g. ../../models/all-minilm-l6-v2)")
        return None, None
    try:
        tokenizer = vocabulary.tokenizer(folder, reader.content)
    except SiteError as exc:
        reader.error(where, f"{written!r} is not a readable vocabulary: {exc}")
        return None, None
    if len(tokenizer.vocab) > MAX_PIECES:
        reader.error(where, f"{written!r} holds {len(tokenizer.vocab):,} pieces; the page loads the whole vocabulary "
                            f"when the learner types, so a tokens lab takes at most {MAX_PIECES:,}")
        return None, None
    return folder, tokenizer


def read_tokens(reader: Reader, where: tuple, lab_dir: Path) -> TokensSpec | None:
    before = len(reader.diags.items)
    if reader.mapping(where, required=("vocabulary", "examples"),
                      optional=("prompt", "text", "word", "claims", "bpe")) is None:
        return None
    folder, tokenizer = _vocabulary(reader, where + ("vocabulary",), lab_dir)
    bpe_name = reader.string(where + ("bpe",), required=False, multiline=False) or ""
    if bpe_name and bpe_name not in bytelevel.model_names():
        reader.error(where + ("bpe",), f"'bpe' names a decoder model, one of {', '.join(bytelevel.model_names())}, "
                                       f"not {bpe_name!r}{did_you_mean(bpe_name, bytelevel.model_names())}")
        bpe_name = ""
    gguf = bytelevel.locate(bpe_name) if bpe_name else None
    counters = {"wordpiece": _counter(tokenizer)}
    if gguf is not None:
        counters["bpe"] = _counter(bytelevel.tokenizer(gguf), "bpe")
    prompt = reader.string(where + ("prompt",), required=False, multiline=False) or ""
    examples: list[Example] = []
    ids: list[str] = []
    items = reader.sequence(where + ("examples",)) or []
    if items and not MIN_EXAMPLES <= len(items) <= MAX_EXAMPLES:
        reader.error(where + ("examples",), f"compare shows {MIN_EXAMPLES} to {MAX_EXAMPLES} examples, not {len(items)}")
    for i, _ in enumerate(items):
        at = where + ("examples", i)
        if reader.mapping(at, required=("id", "text"), optional=("note", "same_as")) is None:
            continue
        example_id = reader.string(at + ("id",), multiline=False)
        if example_id is not None and not _ID.match(example_id):
            reader.error(at + ("id",), f"example id {example_id!r} must be lower-case letters, digits, '-' and '_'")
            example_id = None
        elif example_id in ids:
            reader.error(at + ("id",), f"duplicate example id {example_id!r}")
            example_id = None
        ids.append(example_id)
        text = _text(reader, at + ("text",), f"example {example_id!r}'s text")
        note = reader.string(at + ("note",), required=False, multiline=False) or ""
        same_as = reader.string(at + ("same_as",), required=False, multiline=False) or ""
        if example_id is not None and text is not None:
            examples.append(Example(example_id, text, note, same_as))
    known = [e.id for e in examples]
    for e in examples:
        if e.same_as and (e.same_as not in known or e.same_as == e.id):
            at = where + ("examples", ids.index(e.id), "same_as")
            reader.error(at, f"'same_as' names another example's id, not {e.same_as!r}"
                             f"{did_you_mean(e.same_as, [k for k in known if k != e.id])}")
    start = examples[0].text if examples else ""
    if reader.value(where + ("text",)) is not None:
        start = _text(reader, where + ("text",), "'text'") or ""
    word = default_word(start, tokenizer) if tokenizer is not None and start else ""
    if reader.value(where + ("word",)) is not None:
        word = reader.string(where + ("word",), multiline=False) or ""
        if word and (len(word.split()) != 1 or len(word) > 100):
            reader.error(where + ("word",), f"'word' is one word of at most 100 characters, not {word!r}")
    if tokenizer is not None and len(reader.diags.items) == before:
        texts = {e.id: e.text for e in examples}
        for i, item in enumerate(reader.sequence(where + ("claims",), nonempty=False) or []
                                 if reader.value(where + ("claims",)) is not None else []):
            at, which = where + ("claims", i), "wordpiece"
            if isinstance(item, dict):  # {bpe: '…'} or {wordpiece: '…'}: the key names the tokenizer
                if reader.mapping(at, optional=("bpe", "wordpiece")) is None:
                    continue
                if len(item) != 1:
                    reader.error(at, "a claim names one tokenizer: {bpe: '…'} or {wordpiece: '…'}")
                    continue
                which = next(iter(item))
                if which == "bpe" and not bpe_name:
                    reader.error(at, "a BPE claim needs the lab's 'bpe:' model (e.g. bpe: smollm2-135m-instruct)")
                    continue
                at = at + (which,)
            claim = reader.string(at, multiline=False)
            if claim is None or which not in counters:  # BPE's tokenizer not fetched: the build's note says so
                continue
            for ref in re.findall(r'"([^"]+)"', claim):
                if len(ref) > MAX_TEXT:
                    reader.error(at, f"a claim's quoted text is {len(ref):,} characters; at most "
                                                        f"{MAX_TEXT} (as an example's)")
                    break
                if ref not in texts and re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)+", ref):
                    reader.error(at, f"{ref!r} looks like an example id but no example has it"
                                 f"{did_you_mean(ref, list(texts))}; quote an example id or the text itself")
                    break
            else:
                ok, truth = check_claim(claim, texts, counters[which])
                if ok is None:
                    reader.error(at, truth)
                elif not ok:
                    reader.error(at, f"{'BPE ' * (which == 'bpe')}claim {claim!r} is false: {truth}")
    if len(reader.diags.items) > before or tokenizer is None:
        return None
    return TokensSpec(str(folder), reader.value(where + ("vocabulary",)), prompt, start, word, tuple(examples),
                      bpe_name, str(gguf) if gguf else "", reader.content)
