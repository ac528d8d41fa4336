"""The theme a build draws its pages with: the default theme, the lab kinds' page parts and an
optional custom folder laid over them file by file (MkDocs' ``custom_dir``), as one Jinja
environment; and the theme's static files built into the site's assets.
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
import rcssmin
import rjsmin
from markupsafe import Markup

from generator.errors import BuildError, ContentError, Diagnostic, SiteError, display_path
from generator.kinds import LabKind
from generator.filepolicy import outside_problem, regular_problem

# The theme that ships inside the package (a non-editable install copies theme/ there), else
# the one of a source checkout.
_PACKAGED_THEME = Path(__file__).resolve().parent / "theme"
_SOURCE_THEME = Path(__file__).resolve().parent.parent / "theme"
KIND_PARTS = ("widget.html", "question.html")  # a kind's templates (and any other *.html beside them); static/ apart


def default_theme_dir() -> Path:
    """The default theme's folder (``templates/`` and ``static/``)."""
    for folder in (_PACKAGED_THEME, _SOURCE_THEME):
        if (folder / "templates" / "base.html").is_file():
            return folder
    raise BuildError("the default theme is missing from this installation; reinstall attention-labs")


class Theme:
    """The theme a build uses: the default theme, the parts of the lab kinds in use, and an
    optional custom folder laid over them file by file (MkDocs' ``custom_dir``).

    Every file has a path in one tree: ``templates/…`` and ``static/…`` of the default theme,
    ``kinds/<name>/widget.html``, ``kinds/<name>/question.html`` and ``kinds/<name>/static/…``
    of each kind. A file at the same path in the custom folder replaces it; new files there
    add to it (a ``static/css/50-mine.css`` joins the site's stylesheet).
    """

    def __init__(self, custom: Path | None = None, kinds: Iterable[LabKind] = (), base: Path | None = None):
        self.custom = Path(custom) if custom is not None else None
        self.base = Path(base) if base is not None else default_theme_dir()
        if self.custom is not None and not self.custom.is_dir():
            raise BuildError("theme folder not found", display_path(self.custom))
        self.kinds = tuple(sorted(kinds, key=lambda k: k.name))
        self.files = self._files()
        self.folder = self.custom or self.base  # where template errors without a file are reported
        self.env = jinja2.Environment(
            loader=jinja2.FunctionLoader(self._load_template),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            bytecode_cache=_COMPILED,
        )
        self.env.filters["later"] = later
        # A function, not a macro in quiz.html: a macro keeps the page's context (and all it was
        # given) in a reference cycle after the render.
        self.env.globals["inline"] = inline_html

    def _files(self) -> dict[str, Path]:
        files: dict[str, Path] = {}
        for kind in self.kinds:
            parts = {*KIND_PARTS, *(f.name for f in kind.folder.glob("*.html"))}  # + partials its widget includes
            for part in sorted(parts):
                if (kind.folder / part).is_file():
                    files[f"kinds/{kind.name}/{part}"] = kind.folder / part
            files.update(_tree(kind.folder / "static", f"kinds/{kind.name}/static/"))
        for top in ("templates", "static"):
            files.update(_tree(self.base / top, f"{top}/"))
        if self.custom is not None:  # the one folder here an author controls: no links out of it
            problems: list[Diagnostic] = []
            for top in ("templates", "static", "kinds"):
                if not _escapes(self.custom / top, self.custom, problems):
                    files.update(_tree(self.custom / top, f"{top}/", self.custom, problems))
            if problems:
                raise ContentError(problems)
        return dict(sorted(files.items()))

    def _load_template(self, name: str):
        rel = name if name.startswith("kinds/") else f"templates/{name}"
        path = self.files.get(rel)
        if path is None:
            return None
        text = path.read_text(encoding="utf-8")
        return text, str(path), lambda: True

    def assets(self) -> dict[str, bytes]:
        """Built assets by logical name: ``site.css`` and ``site.js`` (``static/css``, ``static/js``),
        ``kind-<name>.css`` and ``kind-<name>.js`` (each kind's ``static/``), minified and
        concatenated in file-name order; ``later/<name>.js`` (``static/js/later/``) and ``later/<name>.css``
        (``static/css/later/``), each minified alone, for a page to add when a part that needs it
        comes in (the ``later`` filter, the search box's first focus, an embed page); plus
        every other file of ``static/`` as it is."""
        out: dict[str, bytes] = {}
        bundles = {f"site.{ext}": f"static/{ext}/" for ext in ("css", "js")}
        for kind in self.kinds:
            bundles.update({f"kind-{kind.name}.{ext}": f"kinds/{kind.name}/static/" for ext in ("css", "js")})
        for name, prefix in bundles.items():
            ext = name.rpartition(".")[2]
            parts = [p for rel, p in self.files.items()
                     if rel.startswith(prefix) and "/" not in rel[len(prefix):] and rel.endswith("." + ext)]
            if parts:
                minify = rcssmin.cssmin if ext == "css" else rjsmin.jsmin
                # Each file is minified alone, so a mistake in one cannot run into the next.
                out[name] = b"\n".join(minify(p.read_text(encoding="utf-8")).encode() for p in parts) + b"\n"
        for rel, path in self.files.items():
            if rel.startswith("static/js/later/") and rel.endswith(".js"):  # added by a page when a part needs it
                out[rel[len("static/js/"):]] = rjsmin.jsmin(path.read_text(encoding="utf-8")).encode() + b"\n"
            elif rel.startswith("static/css/later/") and rel.endswith(".css"):  # likewise, its styles
                out[rel[len("static/css/"):]] = rcssmin.cssmin(path.read_text(encoding="utf-8")).encode() + b"\n"
            elif rel.startswith("static/") and rel.split("/")[1] not in ("css", "js"):
                out[rel[len("static/"):]] = path.read_bytes()
        return out

    def render(self, template: str, **context: Any) -> str:
        try:
            return self._render_template(self.env.get_template(template), context)
        except jinja2.TemplateSyntaxError as exc:
            path = Path(exc.filename) if exc.filename else self.folder / "templates" / template
            raise _template_error(path, exc.lineno, exc.message or "invalid template syntax") from None
        except jinja2.TemplateNotFound as exc:
            raise BuildError(f"theme template {exc.name!r} not found", display_path(self.folder / "templates")) from None
        except SiteError:
            raise  # ours, from a helper such as asset() or url()
        except Exception as exc:  # the template failed while rendering: undefined name, bad operand, …
            message = (exc.message or "undefined value") if isinstance(exc, jinja2.UndefinedError) \
                else f"{type(exc).__name__}: {exc}"
            raise _template_error(*self._template_line(exc, template), message) from None

    @staticmethod
    def _render_template(tpl: jinja2.Template, context: dict[str, Any]) -> str:
        """``tpl.render(**context)``, leaving nothing large behind: a rendered page's context and its
        macros refer to each other, a cycle that only the cyclic collector frees, and with it
        everything the page was given (a lab's whole payload). Emptied after the render, the
        cycle holds nothing but itself."""
        ctx = tpl.new_context(context)
        try:
            return tpl.environment.concat(tpl.root_render_func(ctx))  # as Template.render does
        except Exception:
            tpl.environment.handle_exception()  # raises, with the template's lines in the traceback
            raise
        finally:
            ctx.vars.clear()
            ctx.parent.clear()

    def _template_line(self, exc: Exception, template: str) -> tuple[Path, int]:
        """Path and line of the innermost template frame of ``exc`` (Jinja puts template lines in tracebacks)."""
        templates = {str(p) for rel, p in self.files.items() if rel.endswith(".html")}
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            if frame.filename in templates:
                return Path(frame.filename), frame.lineno or 1
        return self.folder / "templates" / template, 1


class _CompiledOnce(jinja2.BytecodeCache):
    """Jinja's bytecode cache kept in memory: a template is compiled once a process, not once a
    build (some 0.2 s of CPU for a site's templates, which ``labs serve`` and many builds in one
    process would pay again and again). Keyed as Jinja keys any bytecode cache, by the template's
    name and file, and checked against the SHA-1 of its source: an edited template is compiled
    anew. Code compiled for one :class:`Theme`'s environment serves the next, since every Theme
    makes its environment with the same options and the same pure filter and global."""

    def __init__(self) -> None:
        self._code: dict[str, tuple[str, Any]] = {}  # key -> (source checksum, code object)

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        found = self._code.get(bucket.key)
        if found is not None and found[0] == bucket.checksum:
            bucket.code = found[1]

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = (bucket.checksum, bucket.code)


_COMPILED = _CompiledOnce()


def _tree(folder: Path, prefix: str, inside: Path | None = None,
          problems: list[Diagnostic] | None = None) -> dict[str, Path]:
    """Every file below ``folder`` by ``prefix`` + its relative path (dot-files left out).

    With ``inside`` (a custom theme folder), symbolic links are followed only while they stay
    inside it; each one that leads out is left out and reported in ``problems``, naming the link.
    A folder reached twice (a loop of links) is read once."""
    if not folder.is_dir():
        return {}
    out: dict[str, Path] = {}
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        here = Path(dirpath)
        real = os.path.realpath(here)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        keep = []
        for name in sorted(dirnames):
            if name.startswith("."):
                continue
            if inside is not None and _escapes(here / name, inside, problems):
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in filenames:
            f = here / name
            if name.startswith("."):
                continue
            if inside is not None and _escapes(f, inside, problems):
                continue
            if not f.is_file():  # a FIFO, a device or a socket is never opened; a custom theme's is an error
                special = regular_problem(f) if inside is not None else None
                if special is not None and problems is not None:
                    problems.append(special)
                continue
            out[prefix + f.relative_to(folder).as_posix()] = f
    return out


def _escapes(path: Path, inside: Path, problems: list[Diagnostic] | None) -> bool:
    problem = outside_problem(path, inside) if path.is_symlink() else None
    if problem is not None and problems is not None:
        problems.append(problem)
    return problem is not None


def _template_error(path: Path, line: int, message: str) -> ContentError:
    """A mistake in a theme template, as a diagnostic at its line (with the line's text)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    column = len(source) - len(source.lstrip()) + 1
    return ContentError([Diagnostic(display_path(path), line, column, f"template error: {message}", source)])


_NOSCRIPT_END = re.compile(r"</(noscript)", re.IGNORECASE)


def later(html: Any, script: str | None = None) -> Markup:
    """``{% filter later %}…{% endfilter %}``: a part of a page kept out of the DOM until it is
    needed, as ``<noscript data-later>…</noscript>`` (theme/static/js/15-later.js turns it into
    elements). Without JavaScript a ``<noscript>`` is ordinary HTML, so the page reads the same.
    ``later(asset('later/x.js'))``: that script is added to the page when the part comes in.

    With JavaScript the browser keeps the part as text that ends at the first ``</noscript``; our
    templates escape ``<`` in text, but sanitised Markdown may keep one in an attribute value
    (``title="</noscript>…"``), where ``&lt;`` means the same: so it is written so there."""
    attrs = str(Markup(' data-script="{}"').format(script)) if script else ""
    return Markup(f"<noscript data-later{attrs}>" + _NOSCRIPT_END.sub(r"&lt;/\1", str(html)) + "</noscript>")


def inline_html(html: Any) -> Markup:
    """Rendered Markdown without the one ``<p>`` around it, so that it runs on from what precedes it
    (a quiz prompt after its number); anything else as it is."""
    html = str(html)
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        html = html[3:-4]
    return Markup(html)
