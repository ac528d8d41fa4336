"""The shape of the code: one way through a build, and modules of one concern each."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Every module of the generator and of the default theme, its scripts included.
MODULES = sorted([*(ROOT / "generator").rglob("*.py"), *(ROOT / "generator").rglob("*.js"),
                  *(ROOT / "theme").rglob("*.js")])
MAX_LINES = 400

# Modules over MAX_LINES that are one thing each: their size today is their ceiling, and what that
# one thing is. Growing past the ceiling means splitting by concern, not raising the number.
ONE_THING = {
    "generator/kinds/attention/static/spotlight.js":
        (682, "the spotlight's one state object: its data, the URL hash, build, measure, paint, events, the door"),
    "generator/kinds/attention/teaching.py": (648, "the designed model: lexicon, roles, heads and their rules"),
    "generator/kinds/attention/cache.py": (567, "the real-heads cache file: its format, written, read and checked"),
    "generator/content.py": (554, "reading a site's authored files into the content model (one loader)"),
    "generator/models/bert.py": (519, "the NumPy BERT encoder and its checkpoint loading"),
    "generator/kinds/attention/reading.py":
        (428, "the spotlight's widget: section read: sentences, tags, claims, each at its line"),
    "generator/serve/incremental.py": (416, "labs serve's SiteBuilder: the pipeline's stages and what each keeps"),
}


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


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_module_is_short_or_one_thing_under_its_ceiling(module):
    name = module.relative_to(ROOT).as_posix()
    lines = len(module.read_text(encoding="utf-8").splitlines())
    ceiling, _ = ONE_THING.get(name, (MAX_LINES, ""))
    assert lines <= ceiling, (f"{name} has {lines} lines: split it by concern" if name not in ONE_THING else
                              f"{name} has {lines} lines, over its ceiling of {ceiling}: split it by concern")


@pytest.mark.parametrize("name", sorted(ONE_THING))
def test_a_waiver_is_for_a_module_that_needs_it(name):
    """A waiver names a module that exists and is over MAX_LINES, so one that shrank loses it."""
    path = ROOT / name
    assert path.is_file(), f"{name} is waived but does not exist"
    assert len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES, f"{name} is short now: drop its waiver"


ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = sorted(p.parent.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "generator").rglob("__init__.py"))
TOP_LEVEL = sorted(p.name for p in (ROOT / "generator").glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("package", PACKAGES + ["theme/", "examples/kind-plugin/"])
def test_the_architecture_names_every_package(package):
    """docs/architecture.md gives each package its paragraph: a new one is written up there."""
    assert f"`{package}`" in ARCHITECTURE.read_text(encoding="utf-8"), f"docs/architecture.md does not name {package}"


@pytest.mark.parametrize("module", TOP_LEVEL)
def test_the_architecture_names_every_top_level_module(module):
    assert f"`{module}`" in ARCHITECTURE.read_text(encoding="utf-8"), f"docs/architecture.md does not name {module}"


def test_pyproject_lists_every_package():
    """The package list is written out (generator.theme is mapped from theme/): a package left out
    of it is left out of a wheel, and an installed labs would miss it."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in (ROOT / "generator").rglob("__init__.py")}
    assert listed == found | {"generator.theme"}
