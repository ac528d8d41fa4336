"""Golden site: the fixture content, built with the fixture theme, byte for byte — its pages and
numbers; its scripts and stylesheets by the sources they are made of (``regen_golden.as_golden``).

After an intended change to the output, regenerate the golden files and review the diff:

    python tests/regen_golden.py

The fixture theme (tests/fixtures/theme/) prints the context the generator hands to
templates (titles, JSON-LD, links, spotlight JSON, quiz, FAQ) in plain markup, so these files
change when the generator's output changes and never when the real theme/ does — nor when a
kind's script or stylesheet is edited, or the minifier changes.
"""

from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path

import rjsmin

from generator.kinds.helpers import minified

from regen_golden import GOLDEN, as_golden, build_fixture_site


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


def _assert_matches_golden(built: dict[str, bytes]) -> None:
    golden = _tree(GOLDEN)
    hint = "\n(after an intended change: python tests/regen_golden.py, then review git diff tests/golden)"
    assert golden, f"no golden files in {GOLDEN}" + hint
    missing, extra = sorted(golden.keys() - built.keys()), sorted(built.keys() - golden.keys())
    assert not missing and not extra, f"files missing from the build: {missing}; not in golden: {extra}" + hint
    difference = _first_difference(golden, built)
    assert not difference, difference + hint


def test_fixture_site_matches_the_golden_files(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    _assert_matches_golden(as_golden(build_fixture_site(tmp_path / "site")))


def test_an_edit_of_a_kinds_code_needs_no_new_golden_files(tmp_path, monkeypatch):
    """The attention kind's bundled script and one it loads later, edited so that their minified
    bytes change but not what they do (a statement's ``;`` left to the line break after it: a
    change of whitespace alone would not survive the minifier): every fingerprint of a file that
    carries them changes, and the golden comparison still holds."""
    from generator.kinds import get_kind
    from generator.kinds.attention import own

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    kind = get_kind("attention")
    copy = tmp_path / "kind"
    shutil.copytree(kind.folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("static/spotlight.js", "static/later/own-ui.js"):
        source = (copy / rel).read_text(encoding="utf-8")
        edited = re.sub(r";\n(\s*)(const|let) ", r"\n\1\2 ", source, count=3)
        (copy / rel).write_text(edited, encoding="utf-8")
        assert minified(copy / rel) != rjsmin.jsmin(source)
    scripts = {name for name in build_fixture_site(tmp_path / "before") if name.endswith(".js")}
    monkeypatch.setattr(type(kind), "folder", property(lambda self: copy))
    monkeypatch.setattr(own, "FOLDER", copy / "static" / "later")
    built = build_fixture_site(tmp_path / "site")
    renamed = {name for name in built if name.endswith(".js")} - scripts
    assert {name.partition(".")[0] for name in renamed} >= {"assets/kind-attention", "assets/kinds/attention/own"}
    _assert_matches_golden(as_golden(built))
