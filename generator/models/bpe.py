"""Byte-level BPE, the tokenizer of GPT-2-style decoders, read from a GGUF's ``tokenizer.ggml.*`` metadata.

Encoding a text, as the tokenizer SmolLM2 was trained with (Hugging Face ``tokenizers``) does it:

1. **Special tokens.** The control tokens of the vocabulary (``<|im_start|>``, ``<|im_end|>``,
   ``<|endoftext|>`` …; GGUF token type 3, and user-defined type 4) are found in the text first,
   leftmost, the longest at a place, and become their own ids; ``special=False`` treats them as text.
2. **Pre-tokenization**, named by ``tokenizer.ggml.pre``:

   * ``gpt2``: GPT-2's regular expression :data:`GPT2_PATTERN` — contractions, an optional
     space then letters, an optional space then numerals, an optional space then other
     symbols, and runs of whitespace (a run before a word leaves its last space to the word);
   * ``smollm``: first every numeral (``\\p{N}``) on its own, then GPT-2's expression on each
     stretch between them. This is SmolLM2's ``tokenizer.json`` pre-tokenizer,
     ``Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False,
     use_regex=True)]``, and llama.cpp's pair ``["\\p{N}", <GPT-2's expression>]`` for the
     pre-type ``smollm``. It differs from plain GPT-2 only next to numerals: ``"a  1"`` is
     ``a``, ``ĠĠ``, ``1`` here and ``a``, ``Ġ``, ``Ġ``, ``1`` under GPT-2's expression alone
     (which leaves the last space for `` 1``; a space before a numeral never merges, the vocabulary
     having no such token).

   ``\\p{L}`` and ``\\p{N}`` are Unicode classes Python's ``re`` lacks; the ``regex`` package
   (the long-kept superset of ``re``) has them, and its ``\\s`` is Unicode's White_Space, as
   in Oniguruma, the engine ``tokenizers`` uses (tests/test_bpe.py checks the split on every
   assigned code point).
3. **Bytes to symbols.** Each piece's UTF-8 bytes become characters by GPT-2's reversible map
   (:func:`bytes_to_unicode`: printable bytes stand for themselves, the others are shifted
   past U+0100, so a space is ``Ġ`` and a newline ``Ċ``).
4. **Merges by rank.** Starting from one symbol per byte, the adjacent pair with the lowest
   rank in ``tokenizer.ggml.merges`` is merged, again and again (the leftmost pair among equals),
   until no pair is a merge. The symbols left are the tokens.

**Bytes the vocabulary lacks.** SmolLM2's 49,152 tokens leave out 21 of the 256 bytes (0x04,
0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2 and 0xF5-0xFF; the lead bytes 0xF1 and 0xF2
begin every character from U+40000 to U+BFFFF). Its trained tokenizer has no unknown token and no
byte fallback, so it drops such a byte silently; so does :func:`encode`, which counts them in
``Encoding.dropped`` so a page can say so. Every other text round-trips: ``decode(encode(t)) == t``.

Decoding joins the tokens' bytes and reads them as UTF-8, an invalid sequence becoming U+FFFD
(as Rust's ``from_utf8_lossy`` in ``tokenizers`` does).

The chat template (``tokenizer.chat_template``, Jinja) is rendered by :func:`render_chat` in
Jinja's immutable sandbox, with ``trim_blocks`` and ``lstrip_blocks`` as transformers renders it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from generator.errors import BuildError, display_path

# GPT-2's pre-tokenizer expression exactly as tokenizers' ByteLevel(use_regex=True) writes it
# (llama.cpp's has no final \s+: its hand-written matcher does the same thing without it).
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
NUMERAL_PATTERN = r"\p{N}"  # smollm: each numeral alone, before GPT-2's expression
PRE_TOKENIZERS = ("gpt2", "smollm")
CONTROL, USER_DEFINED = 3, 4  # GGUF token types matched in text as whole tokens
_GPT2 = regex.compile(GPT2_PATTERN)
_NUMERAL = regex.compile(f"({NUMERAL_PATTERN})")


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character map: the 188 printable Latin-1 bytes stand for themselves, the 68
    others (space, controls, 0x7F-0xA0, 0xAD) become U+0100 onwards in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    shifted = (b for b in range(256) if b not in table)
    table.update({b: chr(256 + n) for n, b in enumerate(shifted)})
    return dict(sorted(table.items()))


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


@dataclass(frozen=True, eq=False)
class BPETokenizer:
    """A byte-level BPE vocabulary, its merges in rank order, its special tokens and chat template."""

    tokens: tuple[str, ...]  # id -> token: bytes in GPT-2's byte alphabet; special tokens as written
    token_types: tuple[int, ...]  # id -> GGUF type: 1 normal, 3 control, 4 user-defined, ...
    merges: tuple[tuple[str, str], ...]  # rank -> (left, right)
    pre: str  # the pre-tokenizer: "smollm" or "gpt2"
    bos_id: int | None = None
    eos_id: int | None = None
    chat_template: str | None = None
    vocab: Mapping[str, int] = field(init=False, repr=False)  # token -> id
    special: Mapping[str, int] = field(init=False, repr=False)  # text of a control/user-defined token -> id
    pair_merges: Mapping[tuple[int, int], tuple[int, int]] = field(init=False, repr=False)  # (left, right) -> (rank, merged id)
    _special_re: regex.Pattern | None = field(init=False, repr=False)
    _cache: dict = field(init=False, repr=False, compare=False)  # piece -> (ids, dropped bytes)

    def __post_init__(self) -> None:
        vocab = {token: i for i, token in enumerate(self.tokens)}
        special = {t: i for i, (t, kind) in enumerate(zip(self.tokens, self.token_types, strict=True)) if kind in (CONTROL, USER_DEFINED)}
        pairs: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(self.merges):
            merged = vocab.get(left + right)
            assert left in vocab and right in vocab and merged is not None, f"merge {left!r} {right!r} is not in the vocabulary"
            pairs.setdefault((vocab[left], vocab[right]), (rank, merged))  # a repeated merge keeps its first rank
        alternatives = sorted(special, key=lambda t: (-len(t), t))  # the longest first: leftmost-longest
        special_re = regex.compile("|".join(regex.escape(t) for t in alternatives)) if alternatives else None
        for name, value in (("vocab", vocab), ("special", special), ("pair_merges", pairs),
                            ("_special_re", special_re), ("_cache", {})):
            object.__setattr__(self, name, value)

    def __getstate__(self) -> dict:  # pickle the data, not the derived tables (rebuilt on load)
        return {name: getattr(self, name) for name in
                ("tokens", "token_types", "merges", "pre", "bos_id", "eos_id", "chat_template")}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.__post_init__()


@dataclass(frozen=True)
class Encoding:
    """One encoded text."""

    text: str
    ids: tuple[int, ...]
    tokens: tuple[str, ...]  # the vocabulary's strings of ``ids`` (byte alphabet; special tokens as written)
    dropped: int = 0  # bytes of the text no token holds (bytes the vocabulary lacks), left out


# ---- reading a GGUF's tokenizer -------------------------------------------------------------------


@lru_cache(maxsize=2)
def tokenizer_from_gguf(gg) -> BPETokenizer:
    """The tokenizer of a :class:`~generator.models.gguf_io.GGUFFile`, built once per parsed file
    (:func:`~generator.models.gguf_io.read_gguf` gives one parse per file, and a build asks for
    the tokenizer from the page's engine and from lab 03; building its tables costs about 0.13 s).

    Raises :class:`BuildError` naming the file: not a byte-level BPE (``tokenizer.ggml.model`` is
    not ``gpt2``), a pre-tokenizer this module does not know, missing or inconsistent token
    lists, a merge whose parts or result are not tokens.
    """
    meta, shown = gg.metadata, display_path(gg.path)

    def fail(message: str) -> BuildError:
        return BuildError(message, path=shown)

    kind = meta.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise fail(f"tokenizer.ggml.model is {kind!r}; this tokenizer reads byte-level BPE ('gpt2')")
    pre = meta.get("tokenizer.ggml.pre", "default")
    pre = "gpt2" if pre == "default" else pre
    if pre not in PRE_TOKENIZERS:
        raise fail(f"pre-tokenizer {pre!r} (tokenizer.ggml.pre) is not supported; known: {', '.join(PRE_TOKENIZERS)}")
    tokens, types, merges = (meta.get(f"tokenizer.ggml.{k}") for k in ("tokens", "token_type", "merges"))
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) and t for t in tokens):
        raise fail("tokenizer.ggml.tokens must be a list of non-empty strings")
    if len(set(tokens)) != len(tokens):
        raise fail("tokenizer.ggml.tokens lists a token twice")
    if types is None:
        types = [1] * len(tokens)
    if not isinstance(types, list) or len(types) != len(tokens) or not all(type(t) is int for t in types):
        raise fail(f"tokenizer.ggml.token_type must list one whole number per token ({len(tokens):,})")
    if not isinstance(merges, list) or not all(isinstance(m, str) for m in merges):
        raise fail("tokenizer.ggml.merges must be a list of strings 'left right'")
    vocab = set(tokens)
    pairs = []
    for rank, merge in enumerate(merges):
        parts = merge.split(" ")
        if len(parts) != 2 or not all(parts) or parts[0] + parts[1] not in vocab or not vocab.issuperset(parts):
            raise fail(f"merge {rank} ({merge!r}) is not two tokens whose join is a token")
        pairs.append((parts[0], parts[1]))

    def token_id(key: str) -> int | None:
        value = meta.get(key)
        if value is None:
            return None
        if type(value) is not int or not 0 <= value < len(tokens):
            raise fail(f"{key} must be a token id below {len(tokens):,}, not {value!r}")
        return value

    template = meta.get("tokenizer.chat_template")
    return BPETokenizer(tokens=tuple(tokens), token_types=tuple(types), merges=tuple(pairs), pre=pre,
                        bos_id=token_id("tokenizer.ggml.bos_token_id"), eos_id=token_id("tokenizer.ggml.eos_token_id"),
                        chat_template=template if isinstance(template, str) else None)


# ---- encoding ---------------------------------------------------------------------------------------


def pre_tokenize(text: str, pre: str = "smollm") -> list[str]:
    """The pieces BPE merges within (never across), in order; they join up to ``text``."""
    assert pre in PRE_TOKENIZERS, f"unknown pre-tokenizer {pre!r}"
    stretches = [text] if pre == "gpt2" else [s for s in _NUMERAL.split(text) if s]
    return [piece for stretch in stretches for piece in _GPT2.findall(stretch)]


def merge_symbols(symbols: list[int], pair_merges: Mapping[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Byte-level BPE on one piece: ids of single-byte tokens -> ids of the merged tokens.

    The pair of the lowest rank is merged first; among pairs of one rank, the leftmost. A heap of
    candidate merges and a linked list of symbols make it O(n log n) in the piece's length (a
    10,000-letter "word" stays fast). An entry whose pair has changed since it was queued is
    skipped, as ``tokenizers``' ``Word::merge_all`` does.
    """
    n = len(symbols)
    if n < 2:
        return list(symbols)
    ids = list(symbols)
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    alive = [True] * n
    heap = []  # (rank, left position, merged id): the lowest rank first, then the leftmost
    for i in range(n - 1):
        found = pair_merges.get((ids[i], ids[i + 1]))
        if found is not None:
            heap.append((found[0], i, found[1]))
    heapq.heapify(heap)
    while heap:
        rank, i, merged = heapq.heappop(heap)
        j = nxt[i]
        if not alive[i] or j < 0:
            continue
        found = pair_merges.get((ids[i], ids[j]))
        if found is None or found[1] != merged:  # queued before a neighbour changed
            continue
        ids[i], alive[j] = merged, False
        nxt[i] = nxt[j]
        if nxt[j] >= 0:
            prv[nxt[j]] = i
        for left, right in ((prv[i], i), (i, nxt[i])):
            if left >= 0 and right >= 0 and (found := pair_merges.get((ids[left], ids[right]))) is not None:
                heapq.heappush(heap, (found[0], left, found[1]))
    return [ids[i] for i in range(n) if alive[i]]


def _encode_piece(piece: str, tokenizer: BPETokenizer) -> tuple[list[int], int]:
    """One pre-tokenized piece -> (token ids, bytes dropped because no token is that byte)."""
    cached = tokenizer._cache.get(piece)
    if cached is None:
        table, vocab = bytes_to_unicode(), tokenizer.vocab
        chars = [table[b] for b in piece.encode("utf-8")]
        symbols = [vocab[c] for c in chars if c in vocab]
        cached = (merge_symbols(symbols, tokenizer.pair_merges), len(chars) - len(symbols))
        if len(tokenizer._cache) < 100_000:  # a long session of learners' text stays bounded
            tokenizer._cache[piece] = cached
    return cached


def encode(text: str, tokenizer: BPETokenizer, special: bool = True) -> Encoding:
    """Token ids of ``text``; with ``special``, control tokens written in it become their ids.

    ``text`` is Unicode text: a lone surrogate (no UTF-8 for it) raises ``UnicodeEncodeError``.
    """
    ids: list[int] = []
    dropped = 0
    segments: list[tuple[str, int | None]] = []
    if special and tokenizer._special_re is not None:
        at = 0
        for match in tokenizer._special_re.finditer(text):
            segments += [(text[at:match.start()], None), (match.group(), tokenizer.special[match.group()])]
            at = match.end()
        segments.append((text[at:], None))
    else:
        segments.append((text, None))
    for segment, special_id in segments:
        if special_id is not None:
            ids.append(special_id)
            continue
        for piece in pre_tokenize(segment, tokenizer.pre):
            piece_ids, lost = _encode_piece(piece, tokenizer)
            ids += piece_ids
            dropped += lost
    return Encoding(text=text, ids=tuple(ids), tokens=tuple(tokenizer.tokens[i] for i in ids), dropped=dropped)


# ---- decoding -----------------------------------------------------------------------------------------


def token_bytes(token_id: int, tokenizer: BPETokenizer) -> bytes:
    """The bytes a token stands for (a special token: its text in UTF-8)."""
    token = tokenizer.tokens[token_id]
    if tokenizer.token_types[token_id] in (CONTROL, USER_DEFINED):
        return token.encode("utf-8")
    table = unicode_to_bytes()
    return bytes(table[c] for c in token)


def decode(ids: Sequence[int], tokenizer: BPETokenizer, skip_special: bool = False) -> str:
    """The text of ``ids``: their bytes joined and read as UTF-8 (invalid sequences -> U+FFFD)."""
    kept = (i for i in ids if not (skip_special and tokenizer.token_types[i] in (CONTROL, USER_DEFINED)))
    return b"".join(token_bytes(i, tokenizer) for i in kept).decode("utf-8", errors="replace")


_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def visible(data: bytes) -> str:
    """A token's bytes as text a reader can see: space ␣, newline ↵, tab ⇥, carriage return ␍, other
    control characters as ``\\xNN``, and bytes that are not (yet) whole UTF-8 as ``<0xNN>``."""
    out: list[str] = []
    at = 0
    while at < len(data):
        for size in (1, 2, 3, 4):  # the shortest valid UTF-8 character starting here
            try:
                char = data[at:at + size].decode("utf-8")
            except UnicodeDecodeError:
                continue
            break
        else:
            out.append(f"<0x{data[at]:02X}>")
            at += 1
            continue
        if char in _VISIBLE:
            out.append(_VISIBLE[char])
        elif char.isprintable():
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
        at += size
    return "".join(out)


# ---- the chat template ----------------------------------------------------------------------------------


def render_chat(tokenizer: BPETokenizer, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True) -> str:
    """The chat template rendered for ``messages`` (each ``{"role": ..., "content": ...}``).

    With ``add_generation_prompt`` the text ends where the assistant's answer begins. Raises
    :class:`BuildError` if the tokenizer has no template or the template fails.
    """
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    if tokenizer.chat_template is None:
        raise BuildError("the model's tokenizer has no chat template (tokenizer.chat_template)")
    for message in messages:
        if not (isinstance(message, Mapping) and isinstance(message.get("role"), str) and isinstance(message.get("content"), str)):
            raise BuildError(f"a chat message needs a text 'role' and 'content', not {message!r}")

    def raise_exception(message: str):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception

    def token(i: int | None) -> str:
        return tokenizer.tokens[i] if i is not None else ""

    try:
        return env.from_string(tokenizer.chat_template).render(
            messages=[dict(m) for m in messages], add_generation_prompt=add_generation_prompt,
            bos_token=token(tokenizer.bos_id), eos_token=token(tokenizer.eos_id))
    except TemplateError as exc:
        raise BuildError(f"the chat template failed: {exc}") from None
