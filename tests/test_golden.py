"""Golden site: the fixture content, built with the fixture theme, byte for byte.

After an intended change to the output, regenerate the golden files and review the diff:

    python tests/regen_golden.py

The fixture theme (tests/fixtures/theme/) prints the context the generator hands to
templates (titles, JSON-LD, links, spotlight JSON, quiz, FAQ) in plain markup, so these files
change when the generator's output changes and never when the real theme/ does.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from regen_golden import GOLDEN, build_fixture_site


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _lines(data: bytes) -> list[str]:
    """Lines for the diff; a long line (the one-line JSON blocks) is broken after each comma,
    so a changed number shows up as one short changed line."""
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        out.extend(line.replace(",", ",\n").splitlines() if len(line) > 200 else [line])
    return [line + "\n" for line in out]


def _first_difference(golden: dict[str, bytes], built: dict[str, bytes]) -> str:
    for name in sorted(golden.keys() & built.keys()):
        if golden[name] != built[name]:
            diff = difflib.unified_diff(_lines(golden[name]), _lines(built[name]), f"golden/{name}", f"built/{name}")
            return f"{name} differs from the golden file:\n" + "".join(list(diff)[:80])
    return ""


def test_fixture_site_matches_the_golden_files(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    build_fixture_site(tmp_path / "site")
    golden, built = _tree(GOLDEN), _tree(tmp_path / "site")
    hint = "\n(after an intended change: python tests/regen_golden.py, then review git diff tests/golden)"
    assert golden, f"no golden files in {GOLDEN}" + hint
    missing, extra = sorted(golden.keys() - built.keys()), sorted(built.keys() - golden.keys())
    assert not missing and not extra, f"files missing from the build: {missing}; not in golden: {extra}" + hint
    difference = _first_difference(golden, built)
    assert not difference, difference + hint
