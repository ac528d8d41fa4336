"""TeX in authors' Markdown → MathML at build time, so no JavaScript math library is needed.

``$…$`` inline and ``$$…$$`` on lines of their own (:func:`add_math` adds both to a Python-Markdown
converter): each formula is converted by latex2mathml, sanitised with a MathML allow-list and
compacted, and stands in the text as a placeholder (:data:`MATH_TOKEN_RE`) until the HTML is
whole, so that Markdown never reads inside it. A formula that cannot be converted, an unknown
command, an unbalanced brace or an unclosed ``$`` is a :class:`MathProblem` for the caller to place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from html import unescape

import latex2mathml.converter
from markdown.inlinepatterns import InlineProcessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

from generator.prose.sanitise import clean_mathml

_MATH_TOKEN = "\ue000math{}\ue001"
MATH_TOKEN_RE = re.compile("\ue000math(\\d+)\ue001")  # where a formula stands in the text


@dataclass(slots=True)
class MathProblem:
    tex: str  # the formula as written (what the caller looks for in the source to place the error)
    message: str
    offset: int = 0  # where in ``tex`` the mistake is


class MathState:
    """The formulas of one document, as MathML in order (``pieces``), and their problems."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.problems: list[MathProblem] = []
        self.tex_of: dict[str, str] = {}  # a formula's MathML -> its TeX, for the document's plain text

    def token(self, tex: str, display: bool) -> str:
        mathml, problem = _mathml(tex, display)
        self.tex_of[mathml] = " ".join(tex.split())
        if problem is not None:
            self.problems.append(MathProblem(tex, *problem))
        self.pieces.append(f'<div class="math-display">{mathml}</div>' if display else mathml)
        return _MATH_TOKEN.format(len(self.pieces) - 1)


@lru_cache(maxsize=4096)
def _mathml(tex: str, display: bool) -> tuple[str, tuple[str, int] | None]:
    """One formula as sanitised, compacted MathML, and the problem with it (message and offset in
    ``tex``; None if none). Remembered per formula: a site repeats its formulas from lab to lab."""
    problem = _brace_problem(tex.strip())  # offsets count in the formula as stripped
    try:
        mathml = latex2mathml.converter.convert(tex.strip(), display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises many kinds; all mean "bad TeX"
        reason = str(exc) or re.sub(r"(?<!^)(?=[A-Z])", " ", type(exc).__name__).lower().removesuffix(" error")
        problem = problem or (f"cannot convert math ${tex}$ to MathML: {reason}", 0)
        mathml = ""
    unknown = _UNKNOWN_COMMAND.search(mathml)
    if problem is None and unknown:  # latex2mathml writes a command it does not know as text
        command = unknown.group(1)
        problem = (f"unknown TeX command {command} in ${tex}${did_you_mean_command(command)}",
                   max(tex.strip().find(command), 0))
    # latex2mathml passes \text{…} through unescaped and turns \href/\style into attributes:
    # its output is sanitised like the author's HTML, with an allow-list of MathML.
    return _compact_mathml(clean_mathml(mathml)), problem


_UNKNOWN_COMMAND = re.compile(r"<m[ion][^>]*>(\\[A-Za-z]+)</m[ion]>")


def _brace_problem(tex: str) -> tuple[str, int] | None:
    """An unbalanced brace of ``tex`` (``\\{`` and ``\\}`` are characters, not groups): message, offset."""
    opened: list[int] = []
    i = 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            opened.append(i)
        elif c == "}":
            if not opened:
                return f"unbalanced braces in ${tex}$: this '}}' closes nothing", i
            opened.pop()
        i += 1
    if opened:
        return f"unbalanced braces in ${tex}$: this '{{' is never closed", opened[-1]
    return None


@lru_cache(maxsize=1)
def _known_commands() -> tuple[str, ...]:
    import latex2mathml.commands as commands

    names = set()
    for value in vars(commands).values():
        items = value if isinstance(value, (set, tuple, list, frozenset, dict)) else (value,)
        names.update(v for v in items if isinstance(v, str) and re.fullmatch(r"\\[A-Za-z]+", v))
    return tuple(sorted(names))


def did_you_mean_command(command: str) -> str:
    """`` (did you mean \\sqrt?)`` for the known command closest to ``command``, or ""."""
    import difflib

    close = difflib.get_close_matches(command, _known_commands(), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


_MATH_OPEN = re.compile(r'<math(?: xmlns="http://www.w3.org/1998/Math/MathML")?( display="\w+")>')


def _compact_mathml(mathml: str) -> str:
    """Drop what HTML does not need: the namespace (the HTML parser puts <math> in MathML's
    own), entities for plain characters, and a single <mrow> wrapping the whole formula
    (<math> is an implicit mrow)."""
    mathml = _MATH_OPEN.sub(r"<math\1>", mathml, count=1)
    mathml = _ENTITY.sub(_plain_char, mathml)
    head, _, rest = mathml.partition(">")
    if rest.startswith("<mrow>") and rest.endswith("</mrow></math>") and _single_group(rest[6:-14]):
        mathml = f"{head}>{rest[6:-14]}</math>"
    return mathml


_ENTITY = re.compile(r"&#x([0-9A-Fa-f]+);")


def _plain_char(m: re.Match) -> str:
    """``&#x00028;`` → ``(``: the page is UTF-8, so only markup characters need escaping."""
    char = chr(int(m.group(1), 16))
    return m.group(0) if char in "<>&\"'" or not char.isprintable() else char


def _single_group(inner: str) -> bool:
    """True when the outer <mrow>…</mrow> closes only at the very end (so it is one group)."""
    depth = 0
    for m in re.finditer(r"<(/?)mrow>", inner):
        depth += -1 if m.group(1) else 1
        if depth < 0:
            return False
    return depth == 0


class DisplayMath(Preprocessor):
    """``$$`` on a line of its own opens and closes display math (after fenced code is stashed)."""

    def __init__(self, md, state: MathState):
        super().__init__(md)
        self.state = state

    def run(self, lines):
        out, buf, inside = [], [], False
        for line in lines:
            if line.strip() == "$$":
                if inside:
                    out.extend(["", self.state.token("\n".join(buf), display=True), ""])
                    buf = []
                inside = not inside
            elif inside:
                buf.append(line)
            else:
                out.append(line)
        if inside:  # an unclosed block stays as text for the author to see, and is an error
            self.state.problems.append(MathProblem("$$", "unclosed $$: the display math opened here is never "
                                                         "closed (a line with only $$ closes it)"))
            out.extend(["$$", *buf])
        return out


INLINE_MATH = r"(?<![\\$\w])\$(?!\s)([^$\n]+?)(?<!\s)\$(?![\w$])"


class InlineMath(InlineProcessor):
    def __init__(self, pattern, md, state: MathState):
        super().__init__(pattern, md)
        self.state = state

    def handleMatch(self, m, data):
        return self.state.token(unescape(m.group(1)), display=False), m.start(0), m.end(0)


class LoneDollars(Treeprocessor):
    """A ``$`` left in the text after math was taken out opens math that nothing closes. (Escaped
    ``\\$`` and code are still stashed away at this point, so they are not seen.)"""

    def __init__(self, md, state: MathState):
        super().__init__(md)
        self.state = state

    def run(self, root):
        code = {id(e) for pre in root.iter("pre") for e in pre.iter()} | {id(e) for e in root.iter("code")}
        for element in root.iter():
            for text in ((element.text if id(element) not in code else None), element.tail):
                for m in _LONE_DOLLAR.finditer(text or ""):
                    needle = text[m.start():m.start() + 40].split("\n", 1)[0]
                    self.state.problems.append(MathProblem(needle, "unclosed $: nothing closes the math this "
                                                                   "'$' starts (write \\$ for a dollar sign)"))


_LONE_DOLLAR = re.compile(r"(?<![\\$\w])\$(?=[^\s$])")


def add_math(md, state: MathState) -> None:
    """Teach the converter ``md`` ``$…$`` and ``$$…$$``, each formula noted in ``state``."""
    md.ESCAPED_CHARS.append("$")  # \$ writes a dollar sign, not math
    md.preprocessors.register(DisplayMath(md, state), "display_math", 20)
    # Below backticks (190) so `$x$` inside code stays code.
    md.inlinePatterns.register(InlineMath(INLINE_MATH, md, state), "inline_math", 185)
    md.treeprocessors.register(LoneDollars(md, state), "lone_dollars", 1)
