"""Fenced code highlighting: exactly what codehilite and Pygments give, for less."""

from __future__ import annotations

from pathlib import Path

import markdown
import pygments
import pytest

from generator.prose.highlight import CODEHILITE, Highlighter

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = {
    "python": [ROOT / "generator" / "prose" / "highlight.py", ROOT / "generator" / "prose" / "markdown_render.py",
               Path(pygments.__file__).parent / "lexer.py"],
    "js": sorted((ROOT / "theme" / "static" / "js").glob("*.js"))[:3],
    "css": sorted((ROOT / "theme" / "static" / "css").glob("*.css"))[:2],
    "toml": [ROOT / "pyproject.toml"],
    "html": [ROOT / "tests" / "golden" / "404.html"],
    "md": [ROOT / "README.md"],
}
TRICKY = ['s = f"{x!r:>{w}} {y}" + rb\'\\x00\' + """a\n"b"\n"""  # é', "@decorator\nclass A(B, metaclass=M):\n    async def f(self, *a, **k) -> None: ...\n",
          "x = 0x1F + 1_000 + 1e-3j; print(*[i for i in range(3) if i], sep='\\t')\n", "\t\tmixed\ttabs  \n\n\n", "unclosed = '\n(", ""]


def _samples():
    for lang, paths in SAMPLES.items():
        for path in paths:
            # (a line of ``` would close the fence: the shortcut never takes such a block)
            yield pytest.param(lang, path.read_text()[:6000].replace("```", "~~"), id=f"{lang}-{path.name}")
    for i, text in enumerate(TRICKY):
        for lang in ("python", "bash", "json", "text", "no-such-language", None):
            yield pytest.param(lang, text, id=f"tricky{i}-{lang}")


@pytest.mark.parametrize("lang, code", list(_samples()))
def test_highlighted_html_is_codehilites(lang, code):
    md = markdown.Markdown(extensions=["fenced_code", "codehilite"], extension_configs={"codehilite": CODEHILITE})
    fenced = md.preprocessors["fenced_code_block"]
    fenced.run(f"```{lang or ''}\n{code}\n```".split("\n"))
    assert Highlighter(CODEHILITE).html(code + "\n", lang) == md.htmlStash.rawHtmlBlocks[0]
