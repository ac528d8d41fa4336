"""Reading the sampling kind's part of lab.yaml: the dial's grid, the contexts and their logits,
the claims and their conditions (the syntax is in the package's docstring), every mistake at its
line and column; what it gives is a picklable :class:`SamplingSpec`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from generator.kinds import Diagnostic, Reader, did_you_mean
from generator.models import decoding

MAX_POINTS = 100
MAX_CONTEXTS = 6
MIN_WORDS, MAX_WORDS = 2, 12
MAX_ABS_LOGIT = 100.0
DEFAULT_SEED = 42

_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_WORD = re.compile(r"^[^\s,:=<>%#]+$")
_CLAIM = re.compile(r"^at\s+T\s*=\s*(?P<t>[^\s:]*)\s*:\s*(?P<cond>.*)$", re.S)
_CLAIM_KEY = re.compile(r"^at\s+T\s*=\s*(?P<t>\S*)$")
_SHARE = re.compile(r"^(?P<word>[^\s,:=<>%#≥≤]+)\s*(?P<op>>=|<=|>|<|≥|≤)\s*(?P<num>\d+(?:\.\d+)?)\s*%$")
_TOP_K = re.compile(r"^top-(?P<k>\d+)\s*=\s*(?P<words>.*)$")
_TOP_P = re.compile(r"^top-p\s*(?P<p>\d+)\s*%\s*=\s*(?P<words>.*)$")
_OPS = {">=": ">=", "≥": ">=", "<=": "<=", "≤": "<=", ">": ">", "<": "<"}
_CONDITION_HELP = "write 'mat >= 80%', 'top-3 = mat, sofa, floor' or 'top-p 90% = mat, sofa'"


@dataclass(frozen=True)
class Condition:
    """``share``: words[0] op value (a fraction); ``top-k``: the value most likely words are
    ``words``; ``top-p``: the nucleus at value % is ``words``. Words are indexes."""

    kind: str
    words: tuple[int, ...]
    op: str = ""
    value: float = 0.0
    text: str = ""


@dataclass(frozen=True)
class Claim:
    text: str
    t_index: int
    condition: Condition
    at: Diagnostic  # where the claim is written; the message is filled in when it fails


@dataclass(frozen=True)
class ContextSpec:
    id: str
    text: str
    note: str
    words: tuple[str, ...]  # from the highest logit down (ties: as written)
    logits: tuple[float, ...]
    claims: tuple[Claim, ...]


@dataclass(frozen=True)
class SamplingSpec:
    prompt: str
    temperatures: tuple[float, ...]
    contexts: tuple[ContextSpec, ...]
    default_context: str
    default_t: int  # index into temperatures
    seed: int

    def context(self, context_id: str) -> ContextSpec | None:
        return next((c for c in self.contexts if c.id == context_id), None)

    def fallback(self) -> dict:
        """The default context's distribution, for the page without JavaScript."""
        c = self.context(self.default_context)
        probs = decoding.softmax(c.logits, [self.temperatures[self.default_t]])[0]
        parts = decoding.to_parts(probs)
        pct = decoding.shares(parts)
        return {"text": c.text, "t": format_t(self.temperatures[self.default_t]),
                "rows": [(w, share_text(int(p), int(n), decoding.PARTS)) for w, p, n in zip(c.words, pct, parts)]}


@dataclass(frozen=True)
class DialQuestion:
    context_id: str
    t_indexes: tuple[int, ...]
    condition: str


def share_text(pct: int, parts: int, total: int) -> str:
    """A whole percentage as the page writes it (``pctText`` in static/20-sampling.js): "<1%" for a
    chance that rounds to 0 but can still be drawn, ">99%" for one that rounds to 100 while other
    words can still be drawn; ``parts`` of ``total`` is the unrounded chance."""
    return "<1%" if pct == 0 and parts > 0 else ">99%" if pct == 100 and parts < total else f"{pct}%"


def format_t(t: float) -> str:
    """A temperature as the author would write it: 0.5, 1, 2.25."""
    return f"{t:.6f}".rstrip("0").rstrip(".")


def _number(reader: Reader, where: tuple, what: str) -> float | None:
    value = reader.value(where)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str) and value.strip().lower().lstrip("+-") in (".inf", ".nan", "inf", "nan"):
            reader.error(where, f"{what} must be a finite number, not {value.strip()!r}")
        else:
            shown = "nothing" if value is None else "text" if isinstance(value, str) else "a list" if isinstance(
                value, list) else "a mapping" if isinstance(value, dict) else "true/false"
            reader.error(where, f"{what} must be a number, not {shown}")
        return None
    if not math.isfinite(value):
        reader.error(where, f"{what} must be a finite number")
        return None
    return float(value)


def _occurrence(text: str, needle: str, start: int) -> int:
    """Which occurrence of ``needle`` in ``text`` starts at ``start`` (1-based, overlapping)."""
    return sum(text.startswith(needle, i) for i in range(start)) + 1


def _error_in(reader: Reader, where: tuple, text: str, start: int, needle: str, message: str) -> None:
    """An error at ``needle``, found at ``start`` of the scalar ``text`` at ``where``."""
    if needle:
        reader.error_at(*reader.doc.locate(where, needle, _occurrence(text, needle, start)), message)
    else:
        reader.error(where, message)


def _grid(reader: Reader, where: tuple) -> tuple[float, ...] | None:
    if reader.mapping(where, required=("min", "max", "step")) is None:
        return None
    lo, hi, step = (_number(reader, where + (k,), f"'{k}'") for k in ("min", "max", "step"))
    if lo is None or hi is None or step is None:
        return None
    ok = True
    if lo < 0.01:
        reader.error(where + ("min",), f"the lowest temperature must be at least 0.01 (T = 0 is greedy decoding, "
                                       f"the limit the dial approaches), not {format_t(lo)}")
        ok = False
    if hi > 100:
        reader.error(where + ("max",), f"the highest temperature must be at most 100, not {format_t(hi)}")
        ok = False
    if step <= 0:
        reader.error(where + ("step",), f"'step' must be positive, not {format_t(step)}")
        return None
    if hi <= lo:
        reader.error(where + ("max",), f"'max' ({format_t(hi)}) must be larger than 'min' ({format_t(lo)})")
        return None
    steps = (hi - lo) / step
    if abs(steps - round(steps)) > 1e-6:
        reader.error(where + ("max",), f"'max' must be 'min' plus a whole number of steps: {format_t(lo)} + "
                                       f"{steps:.2f} × {format_t(step)} = {format_t(hi)}")
        return None
    if round(steps) + 1 > MAX_POINTS:
        reader.error(where + ("step",), f"the grid has {round(steps) + 1} temperatures; at most {MAX_POINTS} "
                                        f"fit on the page: use a larger step")
        return None
    return tuple(round(lo + i * step, 6) for i in range(round(steps) + 1)) if ok else None


def grid_index(temperatures, t: float) -> int | None:
    for i, g in enumerate(temperatures):
        if abs(g - t) <= 1e-9 * max(1.0, abs(t)):
            return i
    return None


def _off_grid(temperatures, t: float) -> str:
    near = sorted(temperatures, key=lambda g: abs(g - t))[:2]
    return (f"T = {format_t(t)} is not on the dial: its grid runs from {format_t(temperatures[0])} to "
            f"{format_t(temperatures[-1])} in steps of {format_t(temperatures[1] - temperatures[0])} "
            f"(nearest: {', '.join(format_t(g) for g in sorted(near))})")


def read_temperature(reader: Reader, where: tuple, temperatures) -> int | None:
    """The index in ``temperatures`` (the dial's grid) of the temperature written at ``where``; None
    after reporting a value that is not a number or not on the grid."""
    t = _number(reader, where, "a temperature")
    if t is None:
        return None
    index = grid_index(temperatures, t)
    if index is None:
        reader.error(where, _off_grid(temperatures, t))
    return index


def _logits(reader: Reader, where: tuple) -> tuple[list[str], list[float]] | None:
    value = reader.value(where)
    entries: list[tuple[str, tuple, bool, float | None]] = []  # word, where, at a key?, logit
    if isinstance(value, dict):
        for word in value:
            entries.append((word, where + (word,), True, _number(reader, where + (word,), f"the logit of {word!r}")))
    elif isinstance(value, list):
        for i, _ in enumerate(value):
            if reader.mapping(where + (i,), required=("word", "logit")) is None:
                continue
            word = reader.string(where + (i, "word"), multiline=False)
            logit = _number(reader, where + (i, "logit"), f"the logit of {word!r}" if word else "a logit")
            if word is not None:
                entries.append((word, where + (i, "word"), False, logit))
    else:
        reader.mapping(where)  # reports "must be a mapping"
        return None
    ok, seen = True, set()
    for word, at, key, logit in entries:
        if not _WORD.match(word):
            reader.error(at, f"word {word!r} must have no spaces and none of , : = < > % #", key=key)
            ok = False
        elif word in seen:
            reader.error(at, f"duplicate word {word!r}", key=key)
            ok = False
        seen.add(word)
        if logit is None:
            ok = False
        elif abs(logit) > MAX_ABS_LOGIT:
            reader.error(at if not key else at, f"the logit of {word!r} must be between −{MAX_ABS_LOGIT:g} and "
                                                f"{MAX_ABS_LOGIT:g}, not {logit:g}")
            ok = False
    if ok and not MIN_WORDS <= len(entries) <= MAX_WORDS:
        reader.error(where, f"a context needs {MIN_WORDS} to {MAX_WORDS} candidate words, not {len(entries)}")
        ok = False
    if not ok:
        return None
    order = sorted(range(len(entries)), key=lambda i: -entries[i][3])  # stable: ties stay as written
    return [entries[i][0] for i in order], [entries[i][3] for i in order]


def _word_list(reader: Reader, where: tuple, text: str, start: int, written: str, words) -> tuple[int, ...] | None:
    found: list[int] = []
    offset, ok = start, True
    for piece in written.split(","):
        word = piece.strip()
        at = offset + (piece.index(word) if word else 0)
        offset += len(piece) + 1
        if not word:
            _error_in(reader, where, text, start, "", f"cannot read {text!r}: an empty word in the list; {_CONDITION_HELP}")
            return None
        index = _word(reader, where, text, at, word, words)
        if index is None:
            ok = False
        elif index in found:
            _error_in(reader, where, text, at, word, f"{word!r} is named twice in {text!r}")
            ok = False
        else:
            found.append(index)
    return tuple(found) if ok else None


def _word(reader: Reader, where: tuple, text: str, start: int, word: str, words) -> int | None:
    if word in words:
        return words.index(word)
    _error_in(reader, where, text, start, word,
              f"unknown word {word!r}{did_you_mean(word, words)}; this context's words are: {', '.join(words)}")
    return None


def read_condition(reader: Reader, where: tuple, text: str, start: int, words) -> Condition | None:
    """The condition written at ``start`` of the scalar ``text`` at ``where``."""
    cond = text[start:].strip()
    start = start + (len(text[start:]) - len(text[start:].lstrip()))
    if m := _SHARE.fullmatch(cond):
        index = _word(reader, where, text, start, m.group("word"), words)
        value = float(m.group("num"))
        if value > 100:
            _error_in(reader, where, text, start + m.start("num"), m.group("num"),
                      f"a probability is at most 100%, not {m.group('num')}%")
            return None
        return None if index is None else Condition("share", (index,), _OPS[m.group("op")], value / 100, cond)
    if m := _TOP_P.fullmatch(cond):
        p = int(m.group("p"))
        if not 1 <= p <= 99:
            _error_in(reader, where, text, start + m.start("p"), m.group("p"),
                      f"top-p must be between 1% and 99% (100% keeps every word), not {p}%")
            return None
        found = _word_list(reader, where, text, start + m.start("words"), m.group("words"), words)
        return None if found is None else Condition("top-p", found, value=p, text=cond)
    if m := _TOP_K.fullmatch(cond):
        k = int(m.group("k"))
        found = _word_list(reader, where, text, start + m.start("words"), m.group("words"), words)
        if found is None:
            return None
        if not 1 <= k < len(words) or k != len(found):
            _error_in(reader, where, text, start + m.start("k"), m.group("k"),
                      f"top-{k} must name {k} word{'s' * (k != 1)}, not {len(found)}" if 1 <= k < len(words) else
                      f"top-k must be between 1 and {len(words) - 1} (the number of words less one), not {k}")
            return None
        return Condition("top-k", found, value=k, text=cond)
    _error_in(reader, where, text, start, cond, f"cannot read the condition {cond!r}: {_CONDITION_HELP}")
    return None


def _claims(reader: Reader, where: tuple, temperatures, words) -> tuple[Claim, ...] | None:
    claims, ok = [], True
    for i, item in enumerate(reader.sequence(where) or []):
        at = where + (i,)
        if isinstance(item, dict) and len(item) == 1:
            key = next(iter(item))
            m = _CLAIM_KEY.fullmatch(key.strip())
            if m is None:
                reader.error(at + (key,), f"cannot read the claim {key!r}: write 'at T=0.5: mat >= 80%'", key=True)
                ok = False
                continue
            t_text, t_pos = m.group("t"), reader.doc.position(at + (key,), key=True)
            cond_where = at + (key,)
            cond_text = reader.string(cond_where, multiline=False)
            if cond_text is None:
                ok = False
                continue
            cond_start, label = 0, f"{key.strip()}: {cond_text}"
        elif isinstance(item, str):
            text = reader.string(at, multiline=False)
            m = _CLAIM.fullmatch(text or "")
            if m is None:
                reader.error(at, f"cannot read the claim {text!r}: write 'at T=0.5: mat >= 80%'")
                ok = False
                continue
            t_text, t_pos = m.group("t"), reader.doc.locate(at, m.group("t") or "T")
            cond_where, cond_text, cond_start, label = at, text, m.start("cond"), text
        else:
            reader.error(at, "a claim is one line: 'at T=0.5: mat >= 80%'")
            ok = False
            continue
        try:
            t = float(t_text)
            if not math.isfinite(t):
                raise ValueError
        except ValueError:
            reader.error_at(*t_pos, f"cannot read the temperature {t_text!r} in claim {label!r}: write 'at T=0.5: …'")
            ok = False
            continue
        t_index = grid_index(temperatures, t)
        if t_index is None:
            reader.error_at(*t_pos, f"claim {label!r}: {_off_grid(temperatures, t)}")
            ok = False
        condition = read_condition(reader, cond_where, cond_text, cond_start, words)
        if condition is None or t_index is None:
            ok = False
            continue
        claims.append(Claim(label, t_index, condition, reader.doc.diagnostic_at(*reader.doc.position(at), "")))
    return tuple(claims) if ok else None


def read_sampling(reader: Reader, where: tuple) -> SamplingSpec | None:
    before = len(reader.diags.items)
    if reader.mapping(where, required=("temperatures", "contexts"),
                      optional=("prompt", "default", "seed")) is None:
        return None
    prompt = reader.string(where + ("prompt",), required=False, multiline=False) or ""
    temperatures = _grid(reader, where + ("temperatures",))
    seed = DEFAULT_SEED
    if reader.value(where + ("seed",)) is not None:
        seed = reader.integer(where + ("seed",), minimum=0)
        if seed is not None and seed > decoding.MASK32:
            reader.error(where + ("seed",), f"'seed' must be at most {decoding.MASK32} (32 bits)")
    contexts, ids = [], []
    items = reader.sequence(where + ("contexts",)) or []
    if len(items) > MAX_CONTEXTS:
        reader.error(where + ("contexts",), f"at most {MAX_CONTEXTS} contexts fit the picker, not {len(items)}")
    for i, _ in enumerate(items):
        at = where + ("contexts", i)
        if reader.mapping(at, required=("id", "text", "logits"), optional=("note", "claims")) is None:
            continue
        context_id = reader.string(at + ("id",), multiline=False)
        if context_id is not None and not _ID.match(context_id):
            reader.error(at + ("id",), f"context id {context_id!r} must be lower-case letters, digits, '-' and '_'")
        elif context_id in ids:
            reader.error(at + ("id",), f"duplicate context id {context_id!r}")
        ids.append(context_id)
        text = reader.string(at + ("text",), multiline=False)
        note = reader.string(at + ("note",), required=False, multiline=False) or ""
        logits = _logits(reader, at + ("logits",))
        claims: tuple[Claim, ...] | None = ()
        if logits is not None and temperatures is not None and reader.value(at + ("claims",)) is not None:
            claims = _claims(reader, at + ("claims",), temperatures, logits[0])
        if None in (context_id, text, logits, claims):
            continue
        contexts.append(ContextSpec(context_id, text, note, tuple(logits[0]), tuple(logits[1]), claims))
    default_context, default_t = (contexts[0].id if contexts else ""), None
    if temperatures is not None:
        default_t = grid_index(temperatures, 1.0)
        if default_t is None:
            default_t = min(range(len(temperatures)), key=lambda i: abs(temperatures[i] - 1.0))
    if reader.value(where + ("default",)) is not None:
        if reader.mapping(where + ("default",), optional=("context", "temperature")) is not None:
            written = reader.string(where + ("default", "context"), required=False, multiline=False)
            if written is not None:
                if written not in ids:
                    reader.error(where + ("default", "context"),
                                 f"unknown context {written!r}{did_you_mean(written, [i for i in ids if i])}")
                default_context = written
            if temperatures is not None and reader.value(where + ("default", "temperature")) is not None:
                default_t = read_temperature(reader, where + ("default", "temperature"), temperatures)
    if len(reader.diags.items) > before or temperatures is None or default_t is None or seed is None:
        return None
    return SamplingSpec(prompt, temperatures, tuple(contexts), default_context, default_t, seed)
