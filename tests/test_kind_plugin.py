"""The example lab kind (examples/kind-plugin/) installed the way an author installs one.

Once per module a fresh virtual environment gets attention-labs and the plugin, both
NON-editable (``pip install --no-deps --no-build-isolation``), so these tests see what a wheel
ships: the default theme inside the package, the kind's widget.html and static/ inside the
plugin, and the entry points that join them. Dependencies come from the running venv through a
``.pth`` file, so nothing is downloaded. Both sources are copied to a temporary folder first:
building attention-labs in place would leave build/ and *.egg-info in the working tree (the
plugin builds from a copy of its own, see its _build/backend.py).

Every ``labs`` command runs as a subprocess of that environment, in a site made by ``labs init``.

Run: ``python -m pytest tests/test_kind_plugin.py -q``
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - reported by the `browser` fixture as a failure
    expect = None

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "kind-plugin"
TIMEOUT = 60  # seconds for any one command; each takes well under one


def _not_source(folder: str, names: list[str]) -> set[str]:
    """What not to copy: the working tree's builds, caches and environments."""
    top = Path(folder) in (ROOT, PLUGIN)
    return {n for n in names if n in ("__pycache__", "build") or n.endswith(".egg-info")
            or (top and (n.startswith(".") or n in ("site", "test-artifacts", "models", "examples")))}


@dataclass(frozen=True)
class Venv:
    folder: Path
    site_packages: Path

    def run(self, *argv: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
        """Run ``argv`` (a program of this venv's bin/ first) in ``cwd``; with ``ok``, fail the
        test with its output unless it exits 0."""
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        program = self.folder / "bin" / argv[0]
        done = subprocess.run([str(program), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        if ok and done.returncode != 0:
            pytest.fail(f"`{' '.join(argv)}` exited {done.returncode}:\n{done.stdout}{done.stderr}", pytrace=False)
        return done

    def labs(self, *argv: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
        return self.run("labs", *argv, cwd=cwd, ok=ok)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Venv:
    tmp = tmp_path_factory.mktemp("kind-plugin")
    folder = tmp / "venv"
    # No pip of its own: the running venv's pip is reachable through the .pth below.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=TIMEOUT)
    python = folder / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=TIMEOUT).stdout.strip()
    site_packages = Path(purelib)
    (site_packages / "_running_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    shutil.copytree(ROOT, tmp / "attention-labs", ignore=_not_source)
    shutil.copytree(PLUGIN, tmp / "kind-plugin", ignore=_not_source)
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", str(tmp / "attention-labs"), str(tmp / "kind-plugin")],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"pip install failed:\n{done.stdout}{done.stderr}"
    return Venv(folder, site_packages)


@pytest.fixture(scope="module")
def site(venv, tmp_path_factory) -> Path:
    """A site made by `labs init` (its example labs and an empty theme/ folder)."""
    parent = tmp_path_factory.mktemp("sites")
    venv.labs("init", "my-site", cwd=parent)
    return parent / "my-site"


@pytest.fixture(scope="module")
def dot_site(venv, site) -> Path:
    """That site with `labs new my-dot --kind dot`, built into my-site/with-dot/."""
    venv.labs("new", "my-dot", "--kind", "dot", cwd=site)
    venv.labs("build", "--output", "with-dot", cwd=site)
    return site / "with-dot"


def _tags(html: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}\b[^>]*>", html)


def _attr(tag: str, name: str) -> str | None:
    m = re.search(rf'\s{name}="([^"]*)"', tag)
    return m.group(1) if m else None


# -- (a) the registry -------------------------------------------------------------------------------

def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts)


def test_installing_the_plugin_as_the_readme_says_leaves_its_folder_as_it_was(tmp_path):
    """`pip install ./examples/kind-plugin` builds in that folder, where setuptools would write
    build/ and labs_kind_dot.egg-info/; the example's backend builds from a copy."""
    copy = tmp_path / "kind-plugin"
    shutil.copytree(PLUGIN, copy, ignore=_not_source)
    before = _files(copy)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "--target", str(tmp_path / "target"), "./kind-plugin"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"pip install failed:\n{done.stdout}{done.stderr}"
    assert _files(copy) == before
    installed = tmp_path / "target" / "labs_kind_dot"
    assert (installed / "widget.html").is_file() and (installed / "static" / "dot.js").is_file()
    entry_points = next((tmp_path / "target").glob("labs_kind_dot-*.dist-info")) / "entry_points.txt"
    assert "dot = labs_kind_dot:DotKind" in entry_points.read_text(encoding="utf-8")
    # An sdist, as a frontend makes one through the backend's hook, carries the backend and installs.
    hook = ("import os, sys; sys.path.insert(0, '_build'); import backend; "
            "print(backend.build_sdist(os.path.abspath(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-B", "-c", hook, str(tmp_path / "dist")], cwd=copy,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert _files(copy) == before
    sdist = tmp_path / "dist" / done.stdout.split()[-1]
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "--target", str(tmp_path / "from-sdist"), str(sdist)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"pip install of the sdist failed:\n{done.stdout}{done.stderr}"
    assert (tmp_path / "from-sdist" / "labs_kind_dot" / "widget.html").is_file()


def test_labs_kinds_lists_the_builtin_kinds_and_the_plugin(venv, tmp_path):
    lines = venv.labs("kinds", cwd=tmp_path).stdout.splitlines()
    kinds = {line.split()[0]: line for line in lines if line.strip()}
    assert {"attention", "dot"} <= set(kinds), lines  # sampling too, once it is registered
    assert "dot product and cosine similarity" in kinds["dot"]
    # …and they come from this venv, not from the working tree's editable install.
    where = venv.run("python", "-c", "import generator, labs_kind_dot; print(generator.__file__); "
                     "print(labs_kind_dot.__file__)", cwd=tmp_path).stdout.split()
    assert [Path(p).parent.parent for p in where] == [venv.site_packages] * 2, where


# -- (b) the default theme ships inside the package; theme/ overrides it --------------------------

def test_a_new_site_builds_with_the_packaged_theme_and_its_theme_folder_overrides_it(venv, site):
    theme = venv.run("python", "-c", "from generator.theme import default_theme_dir; print(default_theme_dir())",
                     cwd=site).stdout.strip()
    assert Path(theme) == venv.site_packages / "generator" / "theme"

    venv.labs("build", cwd=site)  # as an author would: content/ → site/, theme/ holds only a README
    plain = site / "site"
    labs = sorted(p.name for p in (plain / "labs").iterdir())
    assert labs and all((plain / "labs" / slug / "index.html").is_file() for slug in labs)
    default_404 = (plain / "404.html").read_text(encoding="utf-8")
    assert "This page isn&#39;t here" in default_404 or "This page isn't here" in default_404

    (site / "theme" / "static" / "css").mkdir(parents=True)
    (site / "theme" / "static" / "css" / "50-mine.css").write_text(".mine-marker { color: rebeccapurple; }\n")
    (site / "theme" / "templates").mkdir()
    (site / "theme" / "templates" / "404.html").write_text(
        '{% extends "base.html" %}\n{% block main %}<h1 class="mine-404">Lost in my own theme</h1>{% endblock %}\n')
    venv.labs("build", "--output", "themed", cwd=site)
    themed = site / "themed"

    def site_css(folder: Path) -> str:
        href = re.search(r'href="(assets/site\.[0-9a-f]+\.css)"', (folder / "index.html").read_text(encoding="utf-8"))
        return (folder / href.group(1)).read_text(encoding="utf-8")

    before, after = site_css(plain), site_css(themed)
    assert ".mine-marker" not in before and ".mine-marker{color:rebeccapurple}" in after
    assert all(line in after for line in before.splitlines()), "the default stylesheets must stay, joined by mine"
    custom_404 = (themed / "404.html").read_text(encoding="utf-8")
    assert "Lost in my own theme" in custom_404 and "This page isn" not in custom_404
    assert "site-header" in custom_404  # base.html still comes from the packaged theme


# -- (c) the kind's assets load on its labs' pages only ------------------------------------------

def test_the_dot_lab_page_loads_the_kind_script_and_the_index_loads_none(dot_site):
    lab = (dot_site / "labs" / "my-dot" / "index.html").read_text(encoding="utf-8")
    srcs = [_attr(t, "src") for t in _tags(lab, "script") if _attr(t, "src")]
    kind_js = [s for s in srcs if "kind-" in s]
    assert len(kind_js) == 1 and re.fullmatch(r"\.\./\.\./assets/kind-dot\.[0-9a-f]{8,}\.js", kind_js[0]), srcs
    assert "dot-readout" in (dot_site / "labs" / "my-dot" / kind_js[0]).read_text(encoding="utf-8")
    hrefs = [_attr(t, "href") for t in _tags(lab, "link")]
    assert any(re.fullmatch(r"\.\./\.\./assets/kind-dot\.[0-9a-f]{8,}\.css", h or "") for h in hrefs), hrefs
    assert 'id="dot"' in lab and '<input type="range" id="dot-range">' in lab  # widget.html shipped
    # No inline code: every <script> has a src or holds JSON (the pages run under a strict CSP).
    assert all(_attr(t, "src") or _attr(t, "type") in ("application/json", "application/ld+json")
               for t in _tags(lab, "script"))

    index = (dot_site / "index.html").read_text(encoding="utf-8")
    assert "my-dot" in index
    loaded = [_attr(t, "src") for t in _tags(index, "script")] + [_attr(t, "href") for t in _tags(index, "link")]
    assert not [x for x in loaded if x and "kind-" in x], loaded


# -- (d) the widget works in Chromium, from file:// ------------------------------------------------

def _readout(a: list[float], b: list[float], start: list[float] | None = None) -> str:
    """What the widget says for vectors a and b (``start``: the author's a, once a has moved)."""
    def numbers(a):
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return dot, math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    dot, na, nb = numbers(a)
    text = f"a · b = {dot:.2f}, |a| = {na:.2f}, |b| = {nb:.2f}, cosine = {dot / (na * nb):.3f}"
    if start is not None:
        d0, na0, nb0 = numbers(start)
        text += f" (it started at {d0:.2f} and {d0 / (na0 * nb0):.3f})"
    return text


@pytest.mark.browser
def test_moving_a_number_of_a_recomputes_the_dot_product_and_cosine(browser, dot_site):
    problems: list[str] = []
    context = browser.new_context()
    context.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    context.on("weberror", lambda e: problems.append(f"uncaught exception: {e.error}"))
    try:
        page = context.new_page()
        page.goto((dot_site / "labs" / "my-dot" / "index.html").as_uri())
        a, b = [3.0, 1.0, 2.0], [1.0, 2.0, 2.0]  # the lab `labs new --kind dot` writes
        readout = page.locator("#dot-readout")
        expect(readout).to_have_text(_readout(a, b))
        expect(readout).to_have_attribute("aria-live", "polite")
        expect(page.locator(".dot-nojs")).to_be_hidden()

        page.get_by_label("Number of a to move").select_option(label="Number 2")
        page.get_by_label("Or type it").fill("4")
        expect(readout).to_have_text(_readout([3, 4, 2], b, start=a))
        expect(page.locator("#dot-rows tr").nth(1).locator("td").last).to_have_text("8.00")
        expect(page.locator("#dot-rows tr.is-moving")).to_have_count(1)

        slider = page.get_by_label("Its value")
        expect(slider).to_have_value("4")
        slider.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")  # a step of 0.1 each
        expect(slider).to_have_value("4.5")
        expect(readout).to_have_text(_readout([3, 4.5, 2], b, start=a))
        expect(page.get_by_label("Or type it")).to_have_value("4.5")

        page.get_by_role("button", name="Reset a").click()
        expect(readout).to_have_text(_readout(a, b))
    finally:
        context.close()
    assert not problems, problems


# -- (e) mistakes are reported at their line --------------------------------------------------------

def _lab_with(venv: Venv, site: Path, tmp_path: Path, edit) -> tuple[Path, str]:
    """A copy of the site's content with one more dot lab, whose lab.yaml ``edit(text)`` rewrote."""
    shutil.copytree(site / "content", tmp_path / "content")
    venv.labs("new", "bad-lab", "--kind", "dot", cwd=tmp_path)
    path = tmp_path / "content" / "labs" / "bad-lab" / "lab.yaml"
    text = edit(path.read_text(encoding="utf-8"))
    path.write_text(text, encoding="utf-8")
    return path, text


def _at(text: str, needle: str) -> str:
    """``line:col`` of the first ``needle`` in ``text``."""
    index = text.index(needle)
    return f"{text.count(chr(10), 0, index) + 1}:{index - text.rfind(chr(10), 0, index)}"


def test_an_unknown_kind_is_reported_at_its_line_with_a_suggestion(venv, site, tmp_path):
    _, text = _lab_with(venv, site, tmp_path, lambda t: t.replace("\nkind: dot\n", "\nkind: dott\n"))
    done = venv.labs("build", cwd=tmp_path, ok=False)
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"content/labs/bad-lab/lab.yaml:{_at(text, 'dott')}: error: "
                            "unknown lab kind 'dott' (did you mean 'dot'?); the installed kinds are: "), first
    assert "dot" in first.rpartition(": ")[2].split(", ")
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize("section, needle, message", [
    ("a: [3, .inf, 2]\n  b: [1, 2, 2]", ".inf", "number 2 of 'a' must be a finite number, not '.inf'"),
    ("a: [3, 1, 2]\n  b: [1, 2]", "[1, 2]", "'b' must have as many numbers as 'a' (3), not 2"),
    ("a: [3]\n  b: [1]", "[3]", "'a' must have 2 to 8 numbers, not 1"),
    ("a: [0, 0]\n  b: [1, 2]", "[0, 0]", "'a' is all zeros: it has no direction, so no cosine"),
    ("a: [3, 1, 2]\n  b: [1, 2, 2]\n  cosine: 0.5", "0.5",
     "the cosine of a and b is 0.8018, not 0.5 (a · b = 9, |a| = 3.7417, |b| = 3.0000)"),
], ids=["not-finite", "lengths", "too-short", "zero-vector", "claim"])
def test_mistakes_in_a_dot_lab_are_reported_at_their_line(venv, site, tmp_path, section, needle, message):
    def edit(text: str) -> str:
        head, _, _ = text.partition("\ndot:\n")
        return f"{head}\ndot:\n  {section}\n"
    _, text = _lab_with(venv, site, tmp_path, edit)
    done = venv.labs("check", cwd=tmp_path, ok=False)
    assert (done.returncode, done.stderr.splitlines()[:1]) == \
        (1, [f"content/labs/bad-lab/lab.yaml:{_at(text, needle)}: error: {message}"]), done.stdout + done.stderr


def _documented_example() -> str:
    """The dot section of lab.yaml in the example's docs/dot.md, under "A complete example"."""
    page = (PLUGIN / "docs" / "dot.md").read_text(encoding="utf-8")
    for key in ("prompt", "a", "b", "cosine"):
        assert f"| `{key}` |" in page, key
    return re.findall(r"```yaml\n(.*?)```", page[page.index("## A complete example"):], re.S)[-1]


def test_the_plugins_docs_page_documents_its_keys_and_its_example_builds(venv, site, tmp_path):
    example = _documented_example()
    assert example.startswith("dot:\n")
    _lab_with(venv, site, tmp_path / "right", lambda t: t.partition("\ndot:\n")[0] + "\n" + example)
    done = venv.labs("check", cwd=tmp_path / "right", ok=False)
    assert done.returncode == 0, done.stdout + done.stderr
    # …and it is checked: the same example with a wrong cosine fails at that line.
    _, text = _lab_with(venv, site, tmp_path / "wrong", lambda t: t.partition("\ndot:\n")[0] + "\n"
                        + example.replace("cosine: 0.80", "cosine: 0.90"))
    done = venv.labs("check", cwd=tmp_path / "wrong", ok=False)
    assert (done.returncode, done.stderr.splitlines()[:1]) == (1, [
        f"content/labs/bad-lab/lab.yaml:{_at(text, '0.90')}: error: the cosine of a and b is 0.8018, not 0.9 "
        "(a · b = 9, |a| = 3.7417, |b| = 3.0000)"]), done.stdout + done.stderr
