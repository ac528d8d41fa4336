""""Your prompt": the decoder run in the page on the learner's own text, under the dial's settings.

The page (``static/later/live.js``, loaded on the learner's first click, never on a first visit)
loads the decoder's page files (:mod:`generator.runtime.site`, the same files lab 06 loads), runs
the typed prompt's forward pass while the learner types (``model.prefill``), lists the next
token's likeliest choices under the dial's temperature, top-k and top-p, and generates with the
dial's seed (``model.generate``, which follows :mod:`generator.models.sampling`).

The dial's acts (``static/later/dial.js``: a setting changed, a draw, the arithmetic) are the other
file the kind's pages load only after a first visit; :func:`files` ships both.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from generator.kinds.helpers import fingerprint, minified, shared_src
from generator.kinds.sampling.real import MODEL
from generator.runtime.site import decoder_page_ref, decoder_site_files, fetched_decoder

FOLDER = Path(__file__).parent / "static" / "later"  # not in the kind's first-visit bundle


def files() -> dict[str, bytes]:
    """The files the kind's pages load after a first visit, minified, the same for every lab
    (:meth:`SamplingKind.shared_files`): the dial's acts (``sampling-dial.<hash>.js`` and ``.css``,
    loaded when the learner first reaches for the dial) and the live part's code and styles
    (``sampling-live.<hash>.js`` and ``.css``, loaded when the learner asks for the model)."""
    return dict(_later(name) for name in LATER)


LATER = {"sampling-dial.js": "dial.js", "sampling-dial.css": "dial.css", "sampling-live.js": "live.js", "sampling-live.css": "live.css"}


def _later(name: str) -> tuple[str, bytes]:
    return _file(name, minified(FOLDER / LATER[name]))


@functools.lru_cache(maxsize=8)
def _file(name: str, text: str) -> tuple[str, bytes]:
    data = f"{text}\n".encode()
    return fingerprint(name, data), data


def acts(kind: str) -> dict[str, str]:
    """Where a page finds the dial's acts: their code and styles (static/later/dial.js, dial.css)."""
    return {suffix: shared_src(kind, _later(f"sampling-dial.{suffix}")[0]) for suffix in ("js", "css")}


def page_part(kind: str) -> dict[str, Any]:
    """What the page embeds: where the live part's code is, and the model's page files — or why
    this copy of the site cannot run the model."""
    part: dict[str, Any] = {"src": shared_src(kind, _later("sampling-live.js")[0]),
                            "css": shared_src(kind, _later("sampling-live.css")[0])}
    path = fetched_decoder(MODEL)
    if path is None:
        return {**part, "reason": f"This copy of the site was built without the model ({MODEL}), so your own "
                                  f"prompt cannot run here; the prompts above were computed when it was built."}
    ref = decoder_page_ref(path)
    return {**part, **{key: ref[key] for key in ("code", "manifest", "license", "download_bytes")}}


def site_files(wanted: bool) -> dict[str, bytes]:
    path = fetched_decoder(MODEL) if wanted else None
    return decoder_site_files(path) if path is not None else {}
