"""Lab kinds: found through entry points, named in lab.yaml, never imported by the generic core."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_labs as run

from generator.kinds import ENTRY_POINT_GROUP, LabKind, get_kind, kind_names

from test_boundaries import MODULES, module_of, imports

ROOT = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


def test_no_module_reaches_into_another_modules_private_names():
    """``from x import _name`` or ``module._name`` across modules: what is shared is public and named."""
    found = []
    for path in sorted((ROOT / "generator").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for alias in node.names if alias.name.startswith("generator")}
        modules |= {alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("generator")
                    for alias in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("generator"):
                found += [f"{path.name}: from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                  and isinstance(node.value, ast.Name) and node.value.id in modules and node.value.id != "self"):
                found.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert not found, found


def test_every_module_imports_without_cycles():
    """Each module of the generator imports on its own in a fresh interpreter (a cycle fails on one
    of them), and no chain of imports, inside functions too, leads from a module back to it."""
    modules = {module_of(p): p for p in MODULES if p.is_relative_to(ROOT / "generator")}
    names = [n for n in modules if n != "generator.__main__"]
    code = "import importlib, sys\nfor n in sys.argv[1:]:\n    [sys.modules.pop(k) for k in list(sys.modules) if k.startswith('generator')]\n    importlib.import_module(n)\n"
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    graph = {name: {m for _, m in imports(path, name) if m in modules and m != name} for name, path in modules.items()}

    def reachable(start):
        seen, todo = set(), list(graph[start])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(graph[n])
        return seen

    cycles = sorted(m for m in graph if m in reachable(m))
    assert not cycles, f"import cycle through {cycles}"


def test_built_in_kinds_register_through_the_entry_point_group_like_a_plugin():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert eps["attention"] == "generator.kinds.attention:AttentionKind"
    assert "attention" in kind_names()
    kind = get_kind("attention")
    assert isinstance(kind, LabKind) and kind.name == "attention"
    assert (kind.folder / "widget.html").is_file() and list((kind.folder / "static").glob("*.js"))


def test_an_unknown_kind_is_an_error_at_its_line_with_the_known_kinds(project, capsys):
    lab = project / "content/labs/attention/lab.yaml"
    lab.write_text(lab.read_text(encoding="utf-8").replace("kind: attention", "kind: atention"), encoding="utf-8")
    code, out, err = run(capsys, "build", "--output", "site")
    known = ", ".join(kind_names())
    assert (code, err) == (1, [
        f"content/labs/attention/lab.yaml:1:7: error: unknown lab kind 'atention' (did you mean 'attention'?); "
        f"the installed kinds are: {known}",
        "1 error; nothing was written"])


def test_a_lab_without_a_kind_is_told_to_name_one(project, capsys):
    lab = project / "content/labs/attention/lab.yaml"
    lab.write_text(lab.read_text(encoding="utf-8").replace("kind: attention\n", ""), encoding="utf-8")
    code, _, err = run(capsys, "check")
    assert code == 1
    assert err[0] == ("content/labs/attention/lab.yaml:1:1: error: missing required key 'kind': name the lab's kind, "
                      f"one of: {', '.join(kind_names())}")


def test_a_key_of_another_kind_is_unknown_to_this_one(project, capsys):
    """The keys a lab may have are the common ones plus its kind's: 'widget' means nothing elsewhere."""
    for name in kind_names():
        if name != "attention":
            other = name
            break
    else:
        pytest.skip("only one kind is installed")
    lab = project / "content/labs/attention/lab.yaml"
    lab.write_text(lab.read_text(encoding="utf-8").replace("kind: attention", f"kind: {other}"), encoding="utf-8")
    code, _, err = run(capsys, "check")
    assert code == 1
    assert any(re.match(r"content/labs/attention/lab\.yaml:\d+:1: error: unknown key 'widget'", line) for line in err), err


def test_each_page_loads_only_its_own_kinds_script_and_the_index_none(project, capsys):
    code, _, _ = run(capsys, "build", "--output", "site")
    assert code == 0
    site = project / "site"
    scripts = lambda page: re.findall(r'<script src="[^"]*assets/([^"/]+)"', (site / page).read_text(encoding="utf-8"))  # noqa: E731
    styles = lambda page: re.findall(r'<link rel="stylesheet" href="[^"]*assets/([^"/]+)"', re.sub(  # noqa: E731
        r"<noscript>.*?</noscript>", "", (site / page).read_text(encoding="utf-8"), flags=re.S))
    for page in ["index.html", "404.html", *[p.relative_to(site).as_posix() for p in site.glob("topics/*/index.html")]]:
        assert [s.split(".")[0] for s in scripts(page)] == ["site"], page
        assert [s.split(".")[0] for s in styles(page)] == ["site"], page
    for page in site.glob("labs/*/index.html"):
        html = page.read_text(encoding="utf-8")
        kind = re.search(r'data-kind="([a-z0-9-]+)"', html).group(1)
        rel = page.relative_to(site).as_posix()
        assert [s.split(".")[0] for s in scripts(rel)] == ["site", f"kind-{kind}"], rel
        assert [s.split(".")[0] for s in styles(rel)] == ["site", f"kind-{kind}"], rel
    shared = next(site.glob("assets/site.*.js")).read_text(encoding="utf-8")
    assert "lab-data" not in shared and "spotlight" not in shared  # no widget code in the shared script


def test_a_custom_theme_overrides_a_kinds_partial_file_by_file(project, capsys):
    override = project / "theme/kinds/attention/widget.html"
    override.parent.mkdir(parents=True)
    override.write_text('<p id="custom-widget">{{ lab.spec.widget.prompt }}</p>\n', encoding="utf-8")
    code, _, err = run(capsys, "build", "--output", "site")  # theme/ in the working folder is picked up
    assert code == 0, err
    html = (project / "site/labs/attention/index.html").read_text(encoding="utf-8")
    assert '<p id="custom-widget">' in html and 'id="spotlight"' not in html


def test_new_makes_a_lab_of_the_asked_kind_that_builds(project, capsys):
    for name in kind_names():
        code, out, err = run(capsys, "new", f"my-{name}", "--kind", name)
        assert code == 0, err
        text = (project / f"content/labs/my-{name}/lab.yaml").read_text(encoding="utf-8")
        assert re.search(rf"^kind: {name}$", text, re.M)
    code, out, err = run(capsys, "build", "--output", "site")
    assert code == 0, err
    for name in kind_names():
        html = (project / f"site/labs/my-{name}/index.html").read_text(encoding="utf-8")
        assert f'data-kind="{name}"' in html


def test_new_with_an_unknown_kind_is_a_usage_error(project, capsys):
    code, _, err = run(capsys, "new", "x", "--kind", "nope")
    assert code == 2 and "invalid choice: 'nope'" in err[-1]
    assert not (project / "content/labs/x").exists()


def test_init_writes_a_site_that_builds_where_it_is(tmp_path, monkeypatch, capsys):
    code, out, err = run(capsys, "init", str(tmp_path / "mysite"))
    assert code == 0, err
    monkeypatch.chdir(tmp_path / "mysite")
    labs = sorted(p.name for p in Path("content/labs").iterdir())
    assert labs == sorted(f"first-{k}-lab" for k in kind_names() if type(get_kind(k)).__module__.startswith("generator."))
    code, out, err = run(capsys, "build")
    assert code == 0, err
    # Two pages a lab (its page and its embed page), the index, a topic page and the 404 page.
    assert re.match(rf"built {2 * len(labs) + 3} pages, {len(labs)} labs? in ", out[-1]), out
    index = Path("site/index.html").read_text(encoding="utf-8")
    for slug in labs:
        assert f"labs/{slug}/" in index
    # A file in the site's theme/ overrides the default one of the same path.
    Path("theme/templates").mkdir(parents=True)
    Path("theme/templates/404.html").write_text('{% extends "base.html" %}{% block main %}<p>Lost?</p>{% endblock %}\n',
                                                encoding="utf-8")
    assert run(capsys, "build")[0] == 0
    assert "<p>Lost?</p>" in Path("site/404.html").read_text(encoding="utf-8")


def test_init_never_overwrites(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken/notes.txt").write_text("mine", encoding="utf-8")
    code, _, err = run(capsys, "init", str(tmp_path / "taken"))
    assert code == 1 and "never overwrites" in err[0]
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]


def test_build_outside_a_site_says_how_to_start_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "build")
    assert code == 1
    assert err[0] == "content:1:1: error: content folder not found (run `labs init DIR` to start a site)"
    code, _, err = run(capsys, "new", "x")
    assert code == 1 and "labs init DIR" in err[0]


# ---- site files: what labs of several kinds share, written once --------------------------------


def test_a_kinds_site_files_are_written_once_with_its_labs_and_a_store_in_the_cache(project, monkeypatch, capsys):
    from generator.build import build
    from generator.serve.incremental import SiteBuilder

    seen = []

    def site_files(self, labs, options, store):
        seen.append(([lab.slug for lab in labs], store))
        return {"assets/shared/model.js": b"model();\n"}

    monkeypatch.setattr(type(get_kind("sampling")), "site_files", site_files)
    monkeypatch.setattr(type(get_kind("attention")), "site_files", site_files)
    build(project / "content", None, project / "site", cache_dir=project / ".labs-cache")
    assert (project / "site/assets/shared/model.js").read_bytes() == b"model();\n"
    # Asked once, with its labs and its store: before the workers fork (so they share what the kinds
    # made); the build keeps what they gave for the site (generator/build.py)
    assert sorted(seen) == [(["attention"], project / ".labs-cache/kinds/attention"),
                            (["sampling"], project / ".labs-cache/kinds/sampling")]
    seen.clear()
    rebuilt = SiteBuilder(project / "content", None).rebuild()  # labs serve: the same files, no store
    assert rebuilt.files["assets/shared/model.js"] == b"model();\n"
    assert sorted(seen) == [(["attention"], None), (["sampling"], None)]


@pytest.mark.parametrize("given, message", [
    ({"assets/x.js": b"a"}, "lab kinds 'attention' and 'sampling' both give the site file 'assets/x.js', with different bytes"),
    ({"index.js": b"a"}, "site files go under assets/"),
    ({"assets/../x.js": b"a"}, "site files go under assets/"),
    ({"assets/site.css": b"a"}, None),  # made by the build: replaced below by the theme's real name
], ids=["clash", "outside-assets", "dot-dot", "taken"])
def test_site_files_that_clash_or_leave_assets_are_a_build_error(project, monkeypatch, capsys, given, message):
    from generator.build import build_files
    from generator.errors import BuildError

    if message is None:  # a path the build makes itself: the theme's stylesheet
        files, _ = build_files(project / "content")
        taken = next(p for p in files if p.startswith("assets/site.") and p.endswith(".css"))
        given, message = {taken: b"a"}, f"gave the site file {taken!r}, a path the build makes itself"
    monkeypatch.setattr(type(get_kind("attention")), "site_files", lambda self, labs, options, store: given)
    monkeypatch.setattr(type(get_kind("sampling")), "site_files",
                        lambda self, labs, options, store: {p: b"b" for p in given if "x.js" in p})
    with pytest.raises(BuildError) as caught:
        build_files(project / "content")
    assert message in str(caught.value)
