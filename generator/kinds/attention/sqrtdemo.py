"""The ÷√d demo's page parts: its code and numbers as one script loaded on demand.

The numbers come from :mod:`generator.kinds.attention.scaling` (computed in ``AttentionKind.compute``
as ``payload["sqrt"]``; ``sqrt.html`` renders them as a table that needs no script). The slider's
code, ``static/later/sqrt-demo.js``, and the numbers travel together in one fingerprinted classic
script shared by every lab, ``assets/kinds/attention/sqrt-demo.<hash>.js`` (its styles in
``sqrt-demo.<hash>.css``); the page embeds only their URLs (``"sqrt": {"src": …}`` in #lab-data), and ``static/70-sqrt.js`` adds it with
``<script src>`` when the demo nears the screen — so a first visit pays for neither.
"""

from __future__ import annotations

from pathlib import Path

from generator.kinds.helpers import fingerprint, json_for_script, minified

CODE = Path(__file__).parent / "static" / "later" / "sqrt-demo.js"
STYLE = Path(__file__).parent / "static" / "later" / "sqrt-demo.css"


def demo_files(numbers: dict) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    """The demo's script (its numbers, then its code) and its stylesheet: (fingerprinted name,
    bytes) each. The numbers do not depend on the lab, so neither file does: they are among the
    kind's shared files (``assets/kinds/attention/``), fetched once for the whole site."""
    script = f"((window.Labs||={{}}).data||={{}}).sqrtDemo={json_for_script(numbers)};\n{minified(CODE)}\n".encode()
    style = (minified(STYLE) + "\n").encode()
    return (fingerprint("sqrt-demo.js", script), script), (fingerprint("sqrt-demo.css", style), style)
