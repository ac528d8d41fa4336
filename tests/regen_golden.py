"""Regenerate tests/golden/ after an intended change to the generator's output:

    python tests/regen_golden.py

It builds tests/fixtures/content with the fixture theme tests/fixtures/theme exactly as
tests/test_golden.py does, and replaces tests/golden/ with the result as the golden files keep
it (:func:`as_golden`). Review the diff (``git diff tests/golden``) before committing it: every
changed line is a change a reader of the site would see.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent))

import generator.theme  # noqa: E402
from generator.build import build  # noqa: E402
from generator.kinds import all_kinds  # noqa: E402
from generator.kinds.helpers import minified  # noqa: E402

FIXTURE_CONTENT = TESTS / "fixtures" / "content"
FIXTURE_THEME = TESTS / "fixtures" / "theme"
GOLDEN = TESTS / "golden"

# A file the build names by its bytes: "own.4c7cb795.js", "sentences.2e7a6a64.js".
_FINGERPRINTED = re.compile(r"(?P<stem>.+)\.[0-9a-f]{8}(?P<ext>\.[A-Za-z0-9]+)?")
_TEXT = (".html", ".js", ".css", ".xml", ".json", ".txt")
_SHORTEST_CODE = 40  # a shorter minified source could be found by chance inside data: left as it is


def build_fixture_site(output: Path) -> dict[str, bytes]:
    """Build the fixture site into ``output``; the files written, by path. No timestamps:
    SOURCE_DATE_EPOCH must not be set (the caller clears it)."""
    assert "SOURCE_DATE_EPOCH" not in os.environ, "golden files carry no dates; unset SOURCE_DATE_EPOCH"
    # Author-facing paths (which the fixture theme prints) are relative to the working folder.
    # The fixture theme stands alone: it is the default theme here too, so nothing of the real
    # theme/ reaches the golden files (a lab kind's own script and CSS do: they are its output).
    here, output = Path.cwd(), Path(output).resolve()
    default_theme_dir = generator.theme.default_theme_dir
    generator.theme.default_theme_dir = lambda: FIXTURE_THEME
    os.chdir(FIXTURE_CONTENT.parent)
    try:
        return dict(build(FIXTURE_CONTENT, FIXTURE_THEME, output).files)
    finally:
        os.chdir(here)
        generator.theme.default_theme_dir = default_theme_dir


def code_sources() -> dict[str, str]:
    """Every script and stylesheet that a build of the fixture site minifies into it, by its path in
    the theme (the fixture theme's ``static/``, each kind's ``static/``, ``later/`` included), as the
    build minifies it."""
    theme = generator.theme.Theme(None, all_kinds(), base=FIXTURE_THEME)
    return {rel: minified(path) for rel, path in theme.files.items() if rel.endswith((".js", ".css"))}


def as_golden(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """A built site as the golden files keep it: every page and every number byte for byte, but
    scripts and stylesheets by what they are made of rather than by their minified bytes, so that
    an edit of a kind's code or a new minifier changes no golden file —

    - the code the build minified from a source file (:func:`code_sources`) is replaced, wherever a
      script or stylesheet carries it, by ``/* code: <its path> */`` (what is around it — a lab's
      numbers, a kind's tables — stays);
    - a fingerprinted file name, ``own.4c7cb795.js``, is written ``own.#.js``, in paths and in
      every file that names it.
    """
    names: dict[str, str] = {}
    for path in files:
        base = path.rpartition("/")[2]
        m = _FINGERPRINTED.fullmatch(base)
        if m:
            names[base] = f"{m['stem']}.#{m['ext'] or ''}"
    codes = sorted(((text.encode(), f"/* code: {rel} */".encode()) for rel, text in code_sources().items()
                    if len(text) >= _SHORTEST_CODE), key=lambda pair: -len(pair[0]))
    out: dict[str, bytes] = {}
    for path, data in sorted(files.items()):
        if path.endswith((".js", ".css")):
            for code, mark in codes:
                data = data.replace(code, mark)
        if path.endswith(_TEXT):
            for name, kept in names.items():
                data = data.replace(name.encode(), kept.encode())
        folder, slash, base = path.rpartition("/")
        kept_path = folder + slash + names.get(base, base)
        assert kept_path not in out, f"two files would be kept as {kept_path}"
        out[kept_path] = data
    return out


def main() -> int:
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        files = as_golden(build_fixture_site(Path(tmp) / "site"))
    shutil.rmtree(GOLDEN, ignore_errors=True)
    for path, data in files.items():
        (GOLDEN / path).parent.mkdir(parents=True, exist_ok=True)
        (GOLDEN / path).write_bytes(data)
    print(f"wrote {len(files)} files to {GOLDEN.relative_to(TESTS.parent)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
