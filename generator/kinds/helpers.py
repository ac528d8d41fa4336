"""What a lab kind needs besides :mod:`generator.kinds`: page data as JSON, scripts and
stylesheets as fingerprinted files, the addresses of shared files.

Part of a kind's public API (with :mod:`generator.kinds`): the built-in kinds and
``examples/kind-plugin`` import these names from here. The JSON, fingerprinting and minifying
are :mod:`generator.webfiles`'s, a leaf that the renderer and the in-page runtime use as well;
a kind never depends on how the site is drawn or written, and these functions stay the same for
every kind.

Files a kind makes come back from its hooks as bytes by file name; the build decides where
they go:

- beside the lab page, from :meth:`generator.kinds.LabKind.page` (``PageData.files``): what
  differs from lab to lab (:func:`lazy_script` for data, :func:`fingerprint` for anything);
- once per site into ``assets/kinds/<kind>/``, from :meth:`generator.kinds.LabKind.shared_files`:
  what every lab of the kind loads the same (its code, lab-independent tables); a page names
  such a file with :func:`shared_src`.

Every file a page names is fingerprinted (:func:`fingerprint`): its name changes whenever its
bytes do, so a browser may cache it for ever.
"""

from __future__ import annotations

from typing import Any

from generator.webfiles import EncodedArray, JSONText, compact_json, fingerprint, json_for_script, minified

__all__ = ["SHARED_FOLDER", "EncodedArray", "JSONText", "compact_json", "fingerprint", "json_for_script",
           "lazy_script", "minified", "shared_src"]

SHARED_FOLDER = "assets/kinds"  # kinds' shared files, in the site: <SHARED_FOLDER>/<kind>/<name>


def shared_src(kind: str, name: str) -> str:
    """The URL, relative to a lab page (``labs/<slug>/``), of the file ``name`` that kind ``kind``
    returns from :meth:`~generator.kinds.LabKind.shared_files`."""
    return f"../../{SHARED_FOLDER}/{kind}/{name}"


def lazy_script(name: str, variable: str, data: Any) -> tuple[str, bytes]:
    """A classic script that sets ``window.Labs.data[variable]`` to ``data`` (written by
    :func:`json_for_script`), and its fingerprinted name made from ``name``: (name, bytes). A
    kind's code adds it with ``Labs.util.load`` when it is needed (a classic script loads from
    ``file://`` too, where ``fetch`` does not). Raises BuildError as :func:`json_for_script`."""
    script = f"((window.Labs||={{}}).data||={{}}).{variable}={json_for_script(data)};\n".encode()
    return fingerprint(name, script), script
