"""The designed form of a sampling context: hand-written ``logits:`` for a few words, for an author
who wants a toy whose numbers they choose. The page marks such a context as hand-written."""

from __future__ import annotations

import math
import re

from generator.kinds import Reader

MIN_WORDS, MAX_WORDS = 2, 12
MAX_ABS_LOGIT = 100.0
_WORD = re.compile(r"^[^\s,:=<>%#]+$")


def number(reader: Reader, where: tuple, what: str) -> float | None:
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


def read_logits(reader: Reader, where: tuple) -> tuple[list[str], list[float]] | None:
    value = reader.value(where)
    entries: list[tuple[str, tuple, bool, float | None]] = []  # word, where, at a key?, logit
    if isinstance(value, dict):
        for word in value:
            entries.append((word, where + (word,), True, number(reader, where + (word,), f"the logit of {word!r}")))
    elif isinstance(value, list):
        for i, _ in enumerate(value):
            if reader.mapping(where + (i,), required=("word", "logit")) is None:
                continue
            word = reader.string(where + (i, "word"), multiline=False)
            logit = number(reader, where + (i, "logit"), f"the logit of {word!r}" if word else "a logit")
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
