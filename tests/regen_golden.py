"""Regenerate tests/golden/ after an intended change to the generator's output:

    python tests/regen_golden.py

It builds tests/fixtures/content with the fixture theme tests/fixtures/theme exactly as
tests/test_golden.py does, and replaces tests/golden/ with the result. Review the diff
(``git diff tests/golden``) before committing it: every changed line is a change a reader
of the site would see.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent))

import generator.render  # noqa: E402
from generator.build import build  # noqa: E402

FIXTURE_CONTENT = TESTS / "fixtures" / "content"
FIXTURE_THEME = TESTS / "fixtures" / "theme"
GOLDEN = TESTS / "golden"


def build_fixture_site(output: Path) -> dict[str, bytes]:
    """Build the fixture site into ``output``; the files written, by path. No timestamps:
    SOURCE_DATE_EPOCH must not be set (the caller clears it)."""
    assert "SOURCE_DATE_EPOCH" not in os.environ, "golden files carry no dates; unset SOURCE_DATE_EPOCH"
    # Author-facing paths (which the fixture theme prints) are relative to the working folder.
    # The fixture theme stands alone: it is the default theme here too, so nothing of the real
    # theme/ reaches the golden files (a lab kind's own script and CSS do: they are its output).
    here, output = Path.cwd(), Path(output).resolve()
    default_theme_dir = generator.render.default_theme_dir
    generator.render.default_theme_dir = lambda: FIXTURE_THEME
    os.chdir(FIXTURE_CONTENT.parent)
    try:
        return build(FIXTURE_CONTENT, FIXTURE_THEME, output).files
    finally:
        os.chdir(here)
        generator.render.default_theme_dir = default_theme_dir


def main() -> int:
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    files = build_fixture_site(GOLDEN)
    print(f"wrote {len(files)} files to {GOLDEN.relative_to(TESTS.parent)}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
