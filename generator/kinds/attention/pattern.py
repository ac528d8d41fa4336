"""The pattern view: every query of the current head at once, the shuffle, the closest learned heads.

The view's code (``static/later/pattern.js``) and
the numbers only it reads — each self-attention sentence's shuffle (:func:`shuffles`, computed by
:mod:`generator.kinds.attention.shuffle`) and each designed head's closest real head
(:func:`generator.kinds.attention.realmodel.learned_matches`) — travel as one classic script beside
the page, its styles as one stylesheet (:func:`lazy_pattern`); the spotlight adds them the first
time the learner opens the view, so a first visit pays for neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.kinds.attention import shuffle as shuffling
from generator.kinds.attention.numbers import as_json, rounded_lists
from generator.kinds.attention.reading import WidgetSpec
from generator.kinds.helpers import fingerprint, json_for_script, minified

FOLDER = Path(__file__).parent / "static" / "later"


def shuffles(spec: WidgetSpec) -> dict[str, Any]:
    """Per self-attention sentence of two words or more: its seeded shuffle (``order[a]`` = the
    written index of the word in slot a) and each head's bias-free weights before and after."""
    out, weights = {}, []
    for s in spec.sentences:
        if s.kind != "self" or len(s.query_words) < 2:  # a causal mask or a second sentence is order too
            continue
        order = shuffling.shuffled_order(len(s.query_words), shuffling.seed_for(s.id))
        heads = shuffling.shuffle(s.query_words, order, spec.head_ids)
        out[s.id] = {"order": order.tolist(), "heads": {hid: {"before": before, "after": after}
                                                       for hid, (before, after) in heads.items()}}
        weights += out[s.id]["heads"].values()
    # Rounded all at once (one pass of NumPy for the lab, not two per head).
    rounded = iter(rounded_lists([(w, None) for pair in weights for w in pair.values()], spec.weight_decimals))
    for pair in weights:
        pair["before"], pair["after"] = next(rounded), next(rounded)
    return out


def lazy_pattern(shuffle: dict, learned: dict | None, files: dict[str, bytes]) -> dict[str, str]:
    """Add ``pattern.<hash>.js`` (``Labs.data.pattern``, then the view's code) to ``files``; return
    what the page embeds under ``"pattern"`` (its stylesheet is shared: :func:`pattern_style`)."""
    code = minified(FOLDER / "pattern.js")
    texts = {sid: {**s, "heads": {hid: {k: as_json(w) for k, w in pair.items()} for hid, pair in s["heads"].items()}}
             for sid, s in shuffle.items()}  # each list of weights as the JSON text it carries
    data = {"shuffle": texts, "learned": learned}
    script = f"((window.Labs||={{}}).data||={{}}).pattern={json_for_script(data)};\n{code}\n".encode()
    name = fingerprint("pattern.js", script)
    files[name] = script
    return {"src": name}


def pattern_style() -> tuple[str, bytes]:
    """The pattern view's stylesheet: one of the kind's shared files (the same for every lab)."""
    style = (minified(FOLDER / "pattern.css") + "\n").encode()
    return fingerprint("pattern.css", style), style
