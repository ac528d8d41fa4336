"""The tokens kind: how text becomes numbers, on a real model's WordPiece vocabulary.

Author-facing syntax (``lab.yaml``; docs/kinds/tokens.md has every key)::

    tokens:
      vocabulary: ../../models/all-minilm-l6-v2   # required: a model bundle folder, or a folder with a
                                                  # vocab.txt, relative to the lab (see .vocabulary)
      prompt: Type anything.                      # optional, one line above the widget
      text: Tokenizers split unhappiness.         # optional: what "Your text" starts with; default: the
                                                  # first example's text
      word: unhappiness                           # optional: the word step by step starts on; default:
                                                  # the first word of `text` split into the most pieces
      examples:                                   # required, 2 to 8: compare and "why it matters"
        - id: en-greeting                         # lower-case letters, digits, '-', '_'; unique
          text: Good morning, how are you?
          note: English prose.                    # optional
          same_as: en-prose                       # optional: the example saying the same in another language
      bpe: smollm2-135m-instruct                  # optional: a decoder's byte-level BPE beside WordPiece
                                                  # (see .bytelevel); without its fetched GGUF, WordPiece only
      claims:                                     # optional, checked at build
        - '"unhappiness" has 4 pieces'
        - '"unhappiness" is un ##ha ##pp ##iness'
        - '"😀" is [UNK]'
        - '"fr-greeting" needs more pieces than "en-greeting"'
        - '"code" needs more pieces per word than "en-prose"'

A quoted example id stands for its text; anything else quoted is the text itself. A false claim
fails at its line with what the tokenizer computed.

Quiz type ``pieces``, in two forms (``text`` required in both)::

    - type: pieces                 # how many pieces is X?
      text: unhappiness
      choices: [1, 4, 11]          # 2 to 6 whole numbers; the right one is computed
      answer: 4                    # optional, checked
    - type: pieces                 # click the piece that …
      text: unhappiness
      pick: continuation           # continuation (## pieces), word-start, unknown ([UNK]) or one piece
      answer: "##iness"            # optional, checked: a piece pick selects

What is computed where: at build, with :mod:`generator.models.wordpiece` (:mod:`.pieces`):
everything the page shows before the learner types (the starting text's pieces and ids, the
step by step, compare, why it matters, the quiz). In the page, once the learner focuses or types in
"Your text" or "Word": the same tokenizer as ``static/wordpiece.js`` of :mod:`generator.runtime`,
over the vocabulary's script — both loaded then, from ``assets/runtime/<bundle id>/`` (or
``assets/runtime/vocab-<id>/`` for a plain vocabulary folder; :mod:`.vocabulary`).
"""

from __future__ import annotations

import gzip
import html
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from generator.kinds import Computed, KindQuestion, Lab, LabKind, ModelUse, Option, PageData, Reader
from generator.kinds.helpers import fingerprint, minified, shared_src
from generator.models.wordpiece import encode
from generator.kinds.tokens.pieces import count, ratio_text, steps
from generator.kinds.tokens.reading import MAX_TEXT, TokensSpec, describe, read_tokens
from generator.kinds.tokens import bytelevel, vocabulary

PICKS = ("continuation", "word-start", "unknown")


def _tokens(counted) -> list[list]:
    return [[p, i, w] for p, i, w in zip(counted.pieces, counted.ids, counted.word_ids)]


def _listed(pieces, ids, unk: str, special: tuple[int, ...] = ()) -> list[list]:
    """Each piece as the Tokens list draws it: the piece, its id and the item's classes (as
    ``pieceItem`` in static/20-tokens.js gives them)."""
    return [[p, i, "tk-piece" + (" tk-cont" if p.startswith("##") else "") + (" tk-unk" if p == unk else "")
             + (" tk-special" if j in special else "")] for j, (p, i) in enumerate(zip(pieces, ids))]


def compute_payload(spec: TokensSpec) -> dict[str, Any]:
    tokenizer = spec.tokenizer()
    refs = vocabulary.page_refs(Path(spec.vocabulary), spec.content)
    vocab = refs["vocab_script"]
    positions = refs["positions"]
    start = count(spec.text, tokenizer)
    whole = encode(spec.text, tokenizer)  # with [CLS] and [SEP]
    examples = []
    counted = {e.id: count(e.text, tokenizer) for e in spec.examples}
    for e in spec.examples:
        c = counted[e.id]
        twin = counted.get(e.same_as)
        total = len(c.pieces) + 2
        examples.append({
            "id": e.id, "text": e.text, "note": e.note, "chars": c.chars, "words": c.spaced_words,
            "pieces": _tokens(c), "listed": _listed(c.pieces, c.ids, tokenizer.unk_token), "per_word": ratio_text(c.per_word), "total": total,
            "share": f"{100 * total / positions:.1f}" if positions else "", "fits": positions // total if positions else 0,
            # against the same meaning in another language, piece for piece: dividing by words would
            # measure where a script puts its spaces (Japanese puts none), not the tokenizer
            "same_as": e.same_as, "vs_twin": ratio_text(len(c.pieces) / len(twin.pieces)) if twin and twin.pieces else "",
            "unknown": c.pieces.count(tokenizer.unk_token),
        })
    return {
        "runtime": {"code": refs["code"], "vocab": refs["vocab"],
                    "vocab_bytes": len(vocab), "vocab_gzip": len(gzip.compress(vocab, 9, mtime=0)),
                    "model": refs["model"], "size": len(tokenizer.vocab), "positions": positions,
                    "max_chars": tokenizer.max_input_chars_per_word},
        "special": {"cls": [tokenizer.cls_token, tokenizer.vocab[tokenizer.cls_token]],
                    "sep": [tokenizer.sep_token, tokenizer.vocab[tokenizer.sep_token]],
                    "unk": tokenizer.unk_token},
        "text": spec.text, "tokens": _tokens(start), "max_text": MAX_TEXT,
        "listed": _listed(whole.tokens, whole.ids, tokenizer.unk_token, (0, len(whole.tokens) - 1)),
        "counts": {"chars": start.chars, "words": start.spaced_words, "pieces": len(start.pieces)},
        "word": spec.word, "steps": steps(spec.word, tokenizer) if spec.word else None,
        "examples": examples,
        "bpe": _bpe_ref(spec),
    }


def _bpe_ref(spec: TokensSpec) -> dict[str, Any] | None:
    if not spec.bpe:
        return None
    if not spec.bpe_gguf:
        return bytelevel.page_ref(spec.bpe, None)  # why the page shows WordPiece only
    return {**bytelevel.page_ref(spec.bpe, Path(spec.bpe_gguf)), "later": shared_src("tokens", _later_script()[0])}


def _later_script() -> tuple[str, bytes]:
    """static/later/bpe-compare.js, minified and fingerprinted: the BPE comparison's code, which the
    page adds only when the learner asks for it (so a first visit does not carry it)."""
    data = (minified(Path(__file__).parent / "static" / "later" / "bpe-compare.js") + "\n").encode()
    return fingerprint("bpe-compare.js", data), data


def _picked(pick: str, piece: str, unk: str) -> bool:
    if pick == "continuation":
        return piece.startswith("##")
    if pick == "word-start":
        return not piece.startswith("##") and piece != unk
    if pick == "unknown":
        return piece == unk
    return piece == pick


def _read_count_question(reader: Reader, where: tuple, qid: str, text: str, counted, which: str) -> KindQuestion | None:
    choices: list[int] = []
    items = reader.sequence(where + ("choices",)) or []
    most = len(text.encode("utf-8"))  # every piece, WordPiece's or byte-level BPE's, holds a byte of the text at least
    for i, _ in enumerate(items):
        n = reader.integer(where + ("choices", i), minimum=0)
        if n is not None and n > most:
            reader.error(where + ("choices", i), f"{n} pieces cannot be a choice: {text!r} is {most:,} bytes of UTF-8, "
                                                 f"and every piece holds one at least")
            n = None
        elif n is not None and n in choices:
            reader.error(where + ("choices", i), f"{n} is listed twice")
        elif n is not None:
            choices.append(n)
    if not 2 <= len(items) <= 6:
        reader.error(where + ("choices",), f"a pieces question offers 2 to 6 counts, not {len(items)}")
        return None
    if len(choices) != len(items):
        return None
    right = len(counted.pieces)
    truth = describe(counted, f'"{text}"')
    if right not in choices:
        reader.error(where + ("choices",), f"no choice is right: {truth}")
        return None
    if reader.value(where + ("answer",)) is not None:
        answer = reader.integer(where + ("answer",), minimum=0)
        if answer is None:
            return None
        if answer != right:
            reader.error(where + ("answer",), f"answer key {answer} is wrong: {truth}")
            return None
    options = tuple(Option(f"{qid}-n{n}", str(n), str(n), n == right,
                           html.escape(f"{truth}." if n == right else f"Not {n}: {truth}."))
                    for n in choices)
    return KindQuestion(options, {"form": "count", "text": text, "tokenizer": which})


def _read_pick_question(reader: Reader, where: tuple, qid: str, text: str, counted, unk: str | None,
                        which: str) -> KindQuestion | None:
    pick = reader.string(where + ("pick",), multiline=False)
    if pick is None:
        return None
    if pick not in PICKS and (" " in pick or not pick):
        reader.error(where + ("pick",), f"'pick' is one of {', '.join(PICKS)} or one piece, not {pick!r}")
        return None
    results = [_picked(pick, p, unk) for p in counted.pieces]
    truth = describe(counted, f'"{text}"')
    if not any(results) or all(results):
        reader.error(where + ("pick",), f"{'no' if not any(results) else 'every'} piece is picked by {pick!r}, so the "
                     f"question has {'no right' if not any(results) else 'no wrong'} answer: {truth}")
        return None
    if len(counted.pieces) > 24:
        reader.error(where + ("text",), f"a pick question shows at most 24 pieces: {truth}")
        return None
    if reader.value(where + ("answer",)) is not None:
        answer = reader.string(where + ("answer",), multiline=False)
        if answer is None:
            return None
        right = [p for p, ok in zip(counted.pieces, results) if ok]
        if answer not in right:
            reader.error(where + ("answer",), f"answer key {answer!r} is wrong: {pick!r} picks "
                         f"{', '.join(right)} of {truth}")
            return None
    what = {"continuation": "continues a word (##)", "word-start": "starts a word", "unknown": "is [UNK]"}
    options = []
    for j, (piece, ident, ok) in enumerate(zip(counted.pieces, counted.ids, results)):
        kind = ("starts with a space" if piece.startswith("␣") else "has no space before it") if which == "bpe" else \
            "continues a word" if piece.startswith("##") else "is [UNK]" if piece == unk else "starts a word"
        options.append(Option(f"{qid}-p{j}", html.escape(piece), piece, ok,
                              html.escape(f"id {ident}; it {kind}" + ("." if ok else f", and the question asks for "
                                          f"a piece that {what.get(pick, 'is ' + pick)}."))))
    return KindQuestion(tuple(options), {"form": "pick", "text": text, "pick": pick, "tokenizer": which},
                        "any" if sum(results) > 1 else "all")


class TokensKind(LabKind):
    keys = ("tokens",)
    required = ("tokens",)
    question_types = ("pieces",)
    question_keys = {"pieces": (("text",), ("choices", "pick", "answer", "tokenizer"))}
    widget_title = "Try it"
    description = "tokenization: type text and see a real WordPiece vocabulary's pieces, step by step and compared"

    def read(self, reader: Reader, lab_dir: Path) -> TokensSpec | None:
        return read_tokens(reader, ("tokens",), lab_dir)

    def read_question(self, reader: Reader, where: tuple, qtype: str, qid: str, spec: TokensSpec) -> KindQuestion | None:
        text = reader.string(where + ("text",), multiline=False)
        if text is None:
            return None
        if len(text) > MAX_TEXT:
            reader.error(where + ("text",), f"a pieces question's text is {len(text):,} characters; at most {MAX_TEXT}")
            return None
        has_choices, has_pick = (reader.value(where + (k,)) is not None for k in ("choices", "pick"))
        if has_choices == has_pick:
            reader.error(where, "a pieces question has 'choices' (how many pieces?) or 'pick' (click the piece "
                                "that …), " + ("not both" if has_choices else "one of them"))
            return None
        which = reader.string(where + ("tokenizer",), required=False, multiline=False) or "wordpiece"
        if which not in ("wordpiece", "bpe"):
            reader.error(where + ("tokenizer",), f"'tokenizer' is wordpiece (the default) or bpe, not {which!r}")
            return None
        if which == "bpe" and not spec.bpe_gguf:
            reader.error(where + ("tokenizer",), "a BPE question needs the lab's 'bpe:' model, fetched: "
                         + (bytelevel.missing_note(spec.bpe).split("; ")[1] if spec.bpe else "add e.g. "
                            "bpe: smollm2-135m-instruct under tokens:"))
            return None
        unk = spec.tokenizer().unk_token if which == "wordpiece" else None
        counted = spec.counter(which)(text)
        if has_choices:
            return _read_count_question(reader, where, qid, text, counted, which)
        return _read_pick_question(reader, where, qid, text, counted, unk, which)

    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        spec = lab.spec
        notes = (f"{lab.slug}: {bytelevel.missing_note(spec.bpe)}",) if spec.bpe and not spec.bpe_gguf else ()
        return Computed(payload=compute_payload(spec), notes=notes)

    def compute_inputs(self, lab: Lab, options: Mapping[str, Any]) -> tuple[bytes, Sequence[Path]]:
        data, _ = super().compute_inputs(lab, options)
        folder = Path(lab.spec.vocabulary)
        # bundle.json records the SHA-256 of every other file of a bundle, so it stands for the weights
        names = ("bundle.json", "vocab.txt", "tokenizer_config.json")
        return data + pickle.dumps(self.version), tuple(folder / n for n in names if (folder / n).is_file())

    def models(self, lab: Lab) -> Sequence[ModelUse]:
        return (ModelUse(lab.spec.bpe),) if lab.spec.bpe else ()  # `labs models fetch` then fetches it

    def page(self, lab: Lab, payload: Any) -> PageData:
        keep = ("runtime", "special", "text", "word", "bpe")
        return PageData({k: payload[k] for k in keep})

    def shared_files(self) -> Mapping[str, bytes]:
        return dict([_later_script()])

    def site_files(self, labs: Sequence[Lab], options: Mapping[str, Any], store: Path | None) -> Mapping[str, bytes]:
        files: dict[str, bytes] = {}
        for folder, content in sorted({(lab.spec.vocabulary, lab.spec.content) for lab in labs if lab.spec is not None}):
            files.update(vocabulary.site_files(Path(folder), content))
        for gguf in sorted({lab.spec.bpe_gguf for lab in labs if lab.spec is not None and lab.spec.bpe_gguf}):
            files.update(bytelevel.site_files(Path(gguf)))
        return files

    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        return {"lab.yaml": LAB_YAML, "questions": QUESTIONS, "vocab.txt": DEMO_VOCAB}


# The scaffold's own small vocabulary, so that a new lab builds anywhere: the special tokens, every
# ASCII letter and digit alone and continuing a word (so any plain word can be spelt), punctuation,
# and a few whole words and pieces.
DEMO_VOCAB = "\n".join(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    + list("abcdefghijklmnopqrstuvwxyz0123456789") + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    + ["the", "cat", "sat", "on", "mat", "token", "##izer", "##s", "split", "into", "pieces", "un", "##happi",
       "##ness", "happy"]) + "\n"

LAB_YAML = """\
legend:
  - term: Piece
    meaning: one entry of the vocabulary
  - term: "##"
    meaning: marks a piece that continues a word

tokens:
  # A folder with a vocab.txt, relative to this lab: here this lab's own small demo vocabulary.
  # Name a model bundle instead for a real model's, e.g. ../../models/all-minilm-l6-v2.
  vocabulary: .
  text: Tokenizers split unhappiness into pieces.
  examples:
    - id: en-prose
      text: The cat sat on the mat.
      note: Words of the vocabulary are one piece each.
    - id: rare-word
      text: unhappiness
    - id: emoji
      text: 😀
      note: Not in the vocabulary.
  claims:
    - '"rare-word" is un ##happi ##ness'
    - '"😀" is [UNK]'
"""

QUESTIONS = """\
  - type: pieces
    prompt: How many pieces is **unhappiness**?
    text: unhappiness
    choices: [1, 3, 11]
    answer: 3
  - type: pieces
    prompt: Click a piece that continues a word.
    text: unhappiness
    pick: continuation
    answer: "##ness"
"""
