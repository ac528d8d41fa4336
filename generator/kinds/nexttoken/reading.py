"""The next-token kind's ``lab.yaml`` section and its claims: read, validated, positioned.

Everything here is about what the author wrote; the numbers are :mod:`.compute`'s and the checks
against them :mod:`.claims`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from generator.kinds import Diagnostic, Reader, did_you_mean

ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MODEL_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")  # a model's: dots too, as in "llama-3.1-8b"
MODEL = "smollm2-135m-instruct"  # the decoder the page runs (generator.models.store.MODELS)
MAX_TEXTS = 6
MAX_TEXT = 160  # characters: about 40 tokens, whose attention still reads as a picture
MAX_STEPS = 12  # greedy tokens the KV-cache part steps through
MAX_MODELS = 4  # other models in the cache table
DEFAULT_TOKENS = (8192, 131072)
BYTES = {"16-bit": 2, "32-bit": 4, "8-bit": 1}


@dataclass(frozen=True)
class Text:
    id: str
    text: str
    note: str
    at: Diagnostic  # where its text is written


@dataclass(frozen=True)
class CacheModel:
    """A published model config, for the KV cache's size by formula."""

    id: str
    name: str
    layers: int
    heads: int  # query heads
    kv_heads: int
    head_dim: int
    context: int
    source: str  # where the config is published
    at: Diagnostic


@dataclass(frozen=True)
class CacheSpec:
    text: str  # id of the prompt
    steps: int
    bytes: int  # per value in the size table
    tokens: tuple[int, ...]
    models: tuple[CacheModel, ...]
    at: Diagnostic  # where the section is written (or the kind's key, when it is not)


@dataclass(frozen=True)
class Claim:
    """One parsed claim: ``kind`` and ``args`` as in :data:`CLAIM_FORMS`."""

    text: str
    kind: str
    args: tuple
    at: Diagnostic


@dataclass(frozen=True)
class NextTokenSpec:
    prompt: str
    model: str
    texts: tuple[Text, ...]
    default_text: str
    default_token: str | None  # the token the page opens on (its text); None: the guess after the text
    cache: CacheSpec
    claims: tuple[Claim, ...]
    your_text: bool  # the page offers to load the model and score the learner's own text
    at: Diagnostic  # the section's key
    lab_dir: Path  # where the lab's stored results are (generator.runtime.decoded)

    def entry(self, ident: str) -> Text | None:
        return next((t for t in self.texts if t.id == ident), None)



_Q = r'"([a-z0-9][a-z0-9_-]*)"'  # a text's id
_M = r'"([a-z0-9][a-z0-9._-]*)"'  # a model's id
_TOK = r'"((?:[^"\\]|\\.)+)"'  # a token's text, JSON-style escapes (\" \\ \n)
_NUM = r"(\d+(?:\.\d+)?)"
_OP = r"(>=|<=|>|<)"
_SIZE = r"(\d[\d,]*(?:\.\d+)?) ?(B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)"
#: claim forms: (kind, pattern, what it says)
CLAIM_FORMS = (
    ("perplexity", re.compile(rf"perplexity of {_Q} {_OP} {_NUM}")),
    ("cross-entropy", re.compile(rf"cross-entropy of {_Q} {_OP} {_NUM} bits")),
    ("p", re.compile(rf"(in|after) {_Q}, {_TOK} has p {_OP} {_NUM}%")),
    ("least", re.compile(rf"the least likely token of {_Q} is {_TOK}")),
    ("settles", re.compile(rf"(in|after) {_Q}, {_TOK} is the top guess from layer (\d+) on")),
    ("cache", re.compile(rf"the cache(?: of {_M})? for (\d[\d,]*) tokens is {_SIZE}")),
)
CLAIM_HELP = ("claims read 'perplexity of \"fox\" < 30', 'cross-entropy of \"fox\" < 5 bits', "
              "'in \"fox\", \" dog\" has p > 50%', 'after \"capital\", \" Paris\" has p > 50%', "
              "'the least likely token of \"fox\" is \" jumps\"', "
              "'after \"capital\", \" Paris\" is the top guess from layer 30 on' or "
              "'the cache for 1,000 tokens is 23.0 MB' (of \"model-id\" optional)")
UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
         "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}


def unescape(token: str) -> str:
    """A token as written in a claim (JSON-style escapes) → its text."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), token)


def read_size(number: str, unit: str) -> tuple[float, int]:
    """A written size → (bytes, decimals written): "23.0 MB" → (23e6, 1)."""
    digits = number.replace(",", "")
    decimals = len(digits.partition(".")[2])
    return float(digits) * UNITS[unit], decimals


def read_claim(reader: Reader, where: tuple, text: str, texts: set[str], models: set[str]) -> Claim | None:
    for kind, pattern in CLAIM_FORMS:
        m = pattern.fullmatch(text.strip())
        if not m:
            continue
        args = m.groups()
        named = {"perplexity": args[:1], "cross-entropy": args[:1], "p": args[1:2], "least": args[:1],
                 "settles": args[1:2]}.get(kind, ())
        for ident in named:
            if ident not in texts:
                line, col = reader.doc.locate(where, f'"{ident}"')
                reader.error_at(line, col, f"unknown text {ident!r}{did_you_mean(ident, texts)}")
                return None
        if kind == "cache" and args[0] is not None and args[0] not in models:
            line, col = reader.doc.locate(where, f'"{args[0]}"')
            reader.error_at(line, col, f"unknown model {args[0]!r}{did_you_mean(args[0], models)}; the models are "
                                       f"the lab's own ({MODEL}) and those under 'cache: models'")
            return None
        if kind == "p" and float(args[4]) > 100:
            reader.error(where, f"a probability is at most 100%, not {args[4]}%")
            return None
        return Claim(text.strip(), kind, args, reader.doc.diagnostic(where, ""))
    reader.error(where, f"cannot read claim {text.strip()!r}; {CLAIM_HELP}")
    return None


def _texts(reader: Reader, where: tuple) -> list[Text]:
    found: list[Text] = []
    listed = reader.sequence(where) or []
    if len(listed) > MAX_TEXTS:
        reader.error(where, f"at most {MAX_TEXTS} texts, not {len(listed)}")
    for i, _ in enumerate(listed):
        at = where + (i,)
        if reader.mapping(at, required=("id", "text"), optional=("note",)) is None:
            continue
        ident = reader.string(at + ("id",), multiline=False)
        text = reader.string(at + ("text",), multiline=False)
        note = reader.string(at + ("note",), required=False, multiline=False) or ""
        if ident is None or text is None:
            continue
        if not ID.fullmatch(ident):
            reader.error(at + ("id",), f"id {ident!r} must be 1 to 40 lower-case letters, digits, '-' or '_'")
        elif any(t.id == ident for t in found):
            reader.error(at + ("id",), f"id {ident!r} is used twice")
        elif len(text) > MAX_TEXT:
            reader.error(at + ("text",), f"text is {len(text)} characters long; at most {MAX_TEXT}")
        else:
            found.append(Text(ident, text, note, reader.doc.diagnostic(at + ("text",), "")))
    return found


def _models(reader: Reader, where: tuple) -> list[CacheModel]:
    found: list[CacheModel] = []
    listed = reader.sequence(where, nonempty=False) or []
    if len(listed) > MAX_MODELS:
        reader.error(where, f"at most {MAX_MODELS} models, not {len(listed)}")
    fields = ("layers", "heads", "kv_heads", "head_dim", "context")
    for i, _ in enumerate(listed):
        at = where + (i,)
        if reader.mapping(at, required=("id", "name", *fields, "source")) is None:
            continue
        ident = reader.string(at + ("id",), multiline=False)
        name = reader.string(at + ("name",), multiline=False)
        source = reader.string(at + ("source",), multiline=False)
        numbers = [reader.integer(at + (f,), minimum=1, maximum=1 << 24) for f in fields]
        if ident is None or name is None or source is None or None in numbers:
            continue
        if not MODEL_ID.fullmatch(ident) or ident == MODEL or any(m.id == ident for m in found):
            reader.error(at + ("id",), f"model id {ident!r} must be unique, 1 to 40 lower-case letters, digits, "
                                       f"'.', '-' or '_'")
            continue
        if not re.match(r"https?://\S+$", source):
            reader.error(at + ("source",), "source must be the address (http or https) where the config is published")
            continue
        layers, heads, kv_heads, head_dim, context = numbers
        if heads % kv_heads:
            reader.error(at + ("kv_heads",), f"{heads} query heads cannot share {kv_heads} key/value heads evenly")
            continue
        found.append(CacheModel(ident, name, layers, heads, kv_heads, head_dim, context, source,
                                reader.doc.diagnostic(at, "")))
    return found


def _cache(reader: Reader, where: tuple, texts: list[Text]) -> CacheSpec | None:
    ids = [t.id for t in texts]
    if reader.value(where) is None:
        return CacheSpec(ids[0] if ids else "", 6, 2, DEFAULT_TOKENS, (), reader.doc.diagnostic(where[:-1], "", key=True))
    if reader.mapping(where, optional=("text", "steps", "bytes", "tokens", "models")) is None:
        return None
    text = reader.string(where + ("text",), required=False, multiline=False) or (ids[0] if ids else "")
    if ids and text not in ids:
        reader.error(where + ("text",), f"unknown text {text!r}{did_you_mean(text, ids)}")
        return None
    steps = reader.integer(where + ("steps",), required=False, minimum=1, maximum=MAX_STEPS)
    size = reader.integer(where + ("bytes",), required=False, minimum=1, maximum=4)
    if size is not None and size not in (1, 2, 4):
        reader.error(where + ("bytes",), f"bytes per value is 1 (8-bit), 2 (16-bit) or 4 (32-bit), not {size}")
        return None
    tokens: list[int] = []
    for i, _ in enumerate(reader.sequence(where + ("tokens",)) or []):
        count = reader.integer(where + ("tokens", i), minimum=1, maximum=1 << 24)
        if count is not None:
            tokens.append(count)
    if len(tokens) > 4:
        reader.error(where + ("tokens",), f"at most 4 context lengths, not {len(tokens)}")
    models = _models(reader, where + ("models",))
    return CacheSpec(text, steps or 6, size or 2, tuple(tokens) or DEFAULT_TOKENS, tuple(models),
                     reader.doc.diagnostic(where, "", key=True))


def read_next_token(reader: Reader, where: tuple, lab_dir: Path) -> NextTokenSpec | None:
    if reader.mapping(where, required=("texts",),
                      optional=("prompt", "model", "default", "cache", "claims", "your-text")) is None:
        return None
    errors = len(reader.diags.items)
    prompt = reader.string(where + ("prompt",), required=False, multiline=False) or ""
    model = reader.string(where + ("model",), required=False, multiline=False) or MODEL
    if model != MODEL:
        reader.error(where + ("model",), f"unknown model {model!r}; the page runs {MODEL}")
    texts = _texts(reader, where + ("texts",))
    ids = [t.id for t in texts]
    default_text, default_token = ids[0] if ids else "", None
    if reader.value(where + ("default",)) is not None and reader.mapping(where + ("default",), optional=("text", "token")):
        default_text = reader.string(where + ("default", "text"), required=False, multiline=False) or default_text
        if default_text not in ids:
            reader.error(where + ("default", "text"), f"unknown text {default_text!r}{did_you_mean(default_text, ids)}")
        written = reader.value(where + ("default", "token"))
        if written is not None:
            default_token = str(written) if not isinstance(written, (dict, list)) else None
            if default_token is None:
                reader.error(where + ("default", "token"), "token must be a token's text, e.g. \" Paris\"")
    cache = _cache(reader, where + ("cache",), texts)
    models = {MODEL, *(m.id for m in cache.models)} if cache else {MODEL}
    claims = []
    for i, _ in enumerate(reader.sequence(where + ("claims",)) or []):
        text = reader.string(where + ("claims", i), multiline=False)
        if text is not None:
            claim = read_claim(reader, where + ("claims", i), text, set(ids), models)
            if claim is not None:
                claims.append(claim)
    your_text = reader.boolean(where + ("your-text",))  # None when absent: off
    if len(reader.diags.items) > errors or cache is None or not texts:
        return None
    return NextTokenSpec(prompt, model, tuple(texts), default_text, default_token, cache, tuple(claims),
                         bool(your_text), reader.doc.diagnostic(where, "", key=True), Path(lab_dir))
