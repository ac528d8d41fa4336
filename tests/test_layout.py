"""The shape of the code: one way through a build, and modules of one concern each."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "generator").rglob("*.py"))

# Modules over MAX_LINES that are one thing each, and what that thing is.
ONE_THING = {
    "models/bert.py": "the NumPy BERT encoder and its checkpoint loading",
    "kinds/attention/teaching.py": "the designed model: lexicon, roles, heads and their rules",
    "kinds/attention/reading.py": "the spotlight's widget: section read: sentences, tags, claims, each at its line",
    "kinds/attention/realmodel.py": "the model: section: read, real heads from the cache, the head finder on them",
    "kinds/attention/cache.py": "the real-heads cache file: its format, written, read and checked",
    "content.py": "reading a site's authored files into the content model (one loader)",
    "source.py": "positioned YAML and the Reader that reports at line and column",
}
MAX_LINES = 400


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("module", ["serve/incremental.py", "serve/server.py", "pipeline.py", "links.py"])
def test_labs_serve_builds_through_the_pipeline_not_through_labs_build(module):
    assert "generator.build" not in _imports(ROOT / "generator" / module)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(ROOT / "generator").as_posix())
def test_a_module_is_short_or_one_thing(module):
    name = module.relative_to(ROOT / "generator").as_posix()
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES or name in ONE_THING, f"{name} has {lines} lines: split it by concern"
