"""Who may import whom: each package's allow-list, held against every module's imports (AST).

The rules are those the packages' ``__init__`` docstrings state. The one that matters most is the
kind boundary: a lab kind (built in, or a third party's like ``examples/kind-plugin``) imports
only the kind API (``generator.kinds``, ``generator.kinds.helpers``), its own package and the
shared model packages (``generator.models``, ``generator.runtime``). A failure names the file,
the line and the import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "generator"
PLUGIN = ROOT / "examples" / "kind-plugin"
ROOT_MODULES = frozenset({"generator"} | {f"generator.{p.stem}" for p in GENERATOR.glob("*.py") if p.stem != "__init__"})
KIND_API = ("=generator.kinds", "=generator.kinds.helpers")
SHARED_MODELS = ("generator.models", "generator.runtime")


@dataclass(frozen=True)
class Rule:
    """Modules whose name ``applies`` accepts may import only what one of ``allowed`` names:
    ``generator.models`` is that package or module and everything under it; ``=generator.kinds``
    is that module alone."""

    what: str
    allowed: tuple[str, ...]


def _kind_package(module: str) -> str | None:
    """``generator.kinds.<kind>`` for a module of a built-in kind; the top package for the plugin's."""
    parts = module.split(".")
    if parts[:2] == ["generator", "kinds"] and len(parts) >= 3 and parts[2] != "helpers":
        return ".".join(parts[:3])
    if parts[0] != "generator":
        return parts[0]
    return None


def rule_for(module: str) -> Rule:
    """The allow-list of ``module`` (a dotted name)."""
    own_kind = _kind_package(module)
    if own_kind is not None:
        return Rule(f"a lab kind ({own_kind})", KIND_API + (own_kind,) + SHARED_MODELS)
    if module in ("generator.kinds", "generator.kinds.helpers"):
        return Rule("the kind API", ("=generator.kinds", "=generator.errors", "=generator.filepolicy", "=generator.model",
                                     "=generator.pickling", "=generator.source", "=generator.webfiles"))
    if module.startswith("generator.runtime"):
        return Rule("the in-page runtime", SHARED_MODELS + ("=generator.errors", "=generator.filepolicy", "=generator.webfiles"))
    if module.startswith("generator.models"):
        return Rule("the shared models", ("generator.models", "=generator.errors", "=generator.filepolicy"))
    if module.startswith("generator.prose"):
        return Rule("prose", ("generator.prose",))
    if module.startswith("generator.speed"):
        return Rule("speed", ("generator.speed", "=generator", "=generator.content", "=generator.errors",
                              "=generator.filepolicy", "=generator.kinds"))
    if module.startswith("generator.search"):
        return Rule("the site search", ("generator.search", "=generator.model", "=generator.webfiles",
                                        "generator.prose"))
    if module.startswith("generator.export"):
        return Rule("the LMS exports", ("generator.export", "=generator.build", "=generator.errors",
                                        "generator.speed"))
    if module.startswith("generator.serve"):
        stages = ("content", "errors", "filepolicy", "hostheaders", "links", "model", "pipeline", "render", "sitefolder",
                  "theme")
        return Rule("the dev server", ("generator.serve", "generator.speed", "=generator.kinds")
                    + tuple(f"=generator.{m}" for m in stages))
    assert module in ROOT_MODULES, f"{module}: no rule says what it may import"
    # The CLI adds the shared models' own commands (labs models, labs next) beside the kinds' ones;
    # the build cache's keys hold what the model store has fetched (store.fetched_state).
    return Rule("the generic core", tuple(f"={m}" for m in sorted(ROOT_MODULES)) + KIND_API
                + ("generator.prose", "generator.serve", "generator.speed", "generator.search", "generator.export",
                   "=generator.runtime.commands", "=generator.models.store"))


def allows(rule: Rule, name: str) -> bool:
    for pattern in rule.allowed:
        if pattern.startswith("="):
            if name == pattern[1:]:
                return True
        elif name == pattern or name.startswith(pattern + "."):
            return True
    return False


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of this repository (generator, or the plugin's)."""
    base = ROOT if name.split(".")[0] == "generator" else PLUGIN
    path = base.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    """Every module of ours that ``path`` (the module ``module``) imports, at the line that
    imports it: ``from a.b import c`` is ``a.b``, and ``a.b.c`` too when c is a module; relative
    imports are resolved (``from a import b`` of a module b is ``a.b`` alone). Imports inside
    functions count: they are imports all the same."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            modules = [f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}")]
            if len(modules) < len(node.names):  # a name defined in ``base`` itself
                found.append((node.lineno, base))
            found += [(node.lineno, name) for name in modules]
    ours = {"generator", _kind_package(module) or "generator"}
    return sorted((line, name) for line, name in found if name.split(".")[0] in ours)


def violations(path: Path, module: str) -> list[str]:
    """``path:line: imports NAME, outside …`` for each import outside ``module``'s allow-list."""
    rule = rule_for(module)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    core = rule.what == "the generic core"
    may = ("any top-level module, " if core else "") + ", ".join(
        p.lstrip("=") for p in rule.allowed if not core or p.lstrip("=") not in ROOT_MODULES or p in KIND_API)
    return [f"{shown}:{line}: imports {name}, outside the allow-list of {rule.what}: {may}"
            for line, name in imports(path, module) if not allows(rule, name)]


def module_of(path: Path) -> str:
    base = PLUGIN if path.is_relative_to(PLUGIN) else ROOT
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(GENERATOR.rglob("*.py")) + sorted((PLUGIN / "labs_kind_dot").rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_module_keeps_to_its_packages_allow_list(path):
    assert not violations(path, module_of(path)), "\n".join(violations(path, module_of(path)))


def test_the_example_plugin_is_held_to_the_kind_boundary():
    plugin = [p for p in MODULES if p.is_relative_to(PLUGIN)]
    assert plugin and all(rule_for(module_of(p)).what.startswith("a lab kind") for p in plugin)


@pytest.mark.parametrize("planted,module", [
    ("import generator.content", "generator.kinds.attention.own"),
    ("from generator.content import load_content", "generator.kinds.embeddings.store"),
    ("from generator.render import Renderer", "generator.kinds.sampling.reading"),
    ("from generator.kinds.attention import teaching", "generator.kinds.tokens.pieces"),  # another kind
    ("from generator.kinds import attention", "generator.kinds.tokens.pieces"),
    ("from generator.kinds.helpers import fingerprint", "generator.runtime.pagefiles"),  # runtime below the kinds
    ("from generator.errors import BuildError", "labs_kind_dot"),  # a plugin uses the kind API
], ids=["content-in-a-kind", "the-loader-in-a-kind", "renderer-in-a-kind", "kind-in-a-kind",
        "kind-package-in-a-kind", "kind-in-the-runtime", "errors-in-the-plugin"])
def test_a_planted_import_is_named_at_its_line(tmp_path, planted, module):
    """The check can fail: a copy of a real module with one import too many is refused at that line."""
    base = PLUGIN if module.startswith("labs_kind_dot") else ROOT
    source = base.joinpath(*module.split("."))
    source = source / "__init__.py" if source.is_dir() else source.with_suffix(".py")
    text = source.read_text(encoding="utf-8")
    copy = tmp_path / source.name
    copy.write_text(text + f"\n{planted}\n", encoding="utf-8")
    line = text.count("\n") + 2
    assert not violations(source, module)
    found = violations(copy, module)
    assert found and all(f.startswith(f"{copy}:{line}: imports ") for f in found), found
