"""The ÷√d demo's page parts (issue #11, item 6): its code and numbers as one script loaded on demand.

The numbers come from :mod:`generator.attention.scaling` (computed in ``AttentionKind.compute``
as ``payload["sqrt"]``; ``sqrt.html`` renders them as a table that needs no script). The slider's
code, ``static/later/sqrt-demo.js``, and the numbers travel together in one fingerprinted classic
script beside the page, ``sqrt-demo.<hash>.js`` (its styles in ``sqrt-demo.<hash>.css``); the page embeds only their names (``"sqrt": {"src":
…}`` in #lab-data), and ``static/70-sqrt.js`` adds it with
``<script src>`` when the demo nears the screen — so a first visit pays for neither.
"""

from __future__ import annotations

from pathlib import Path

from generator.render import fingerprint, json_for_script, minified

CODE = Path(__file__).parent / "static" / "later" / "sqrt-demo.js"
STYLE = Path(__file__).parent / "static" / "later" / "sqrt-demo.css"


def lazy_demo(numbers: dict, files: dict[str, bytes]) -> dict:
    """Add the demo's script and stylesheet to ``files``; return what the page embeds under ``"sqrt"``."""
    code = minified(CODE)
    script = f"(window.Labs=window.Labs||{{}}).sqrtDemo={json_for_script(numbers)};\n{code}\n".encode()
    name = fingerprint("sqrt-demo.js", script)
    files[name] = script
    style = (minified(STYLE) + "\n").encode()
    css = fingerprint("sqrt-demo.css", style)
    files[css] = style
    return {"src": name, "css": css}

