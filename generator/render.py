"""Render stage: the content model → HTML pages, fingerprinted assets, sitemap and robots.txt.

Nothing here touches the disk except reading the theme: pages come back as a mapping of
output paths to bytes, and :mod:`generator.build` decides where they go.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import re
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

import jinja2
import numpy as np
import rcssmin
import rjsmin
from markupsafe import Markup

from generator.errors import BuildError, ContentError, Diagnostic, SiteError, display_path
from generator.kinds import SHARED_FOLDER, LabKind, get_kind
from generator.source import outside_problem
from generator.model import PROGRESS_STORAGE_KEY, Content, Lab, Topic

# The theme that ships inside the package (a non-editable install copies theme/ there), else
# the one of a source checkout.
_PACKAGED_THEME = Path(__file__).resolve().parent / "theme"
_SOURCE_THEME = Path(__file__).resolve().parent.parent / "theme"
FIRST_VISIT_BUDGET = 115_000  # bytes, raw: a lab page and the theme files it links to (theme/README.md, "Page weight")
KIND_PARTS = ("widget.html", "question.html")  # a kind's templates (and any other *.html beside them); static/ apart


def default_theme_dir() -> Path:
    """The default theme's folder (``templates/`` and ``static/``)."""
    for folder in (_PACKAGED_THEME, _SOURCE_THEME):
        if (folder / "templates" / "base.html").is_file():
            return folder
    raise BuildError("the default theme is missing from this installation; reinstall attention-labs")


def source_date() -> str:
    """ISO date from SOURCE_DATE_EPOCH for reproducible builds, or "" (no timestamps at all)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit():
        return ""
    try:
        return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        raise BuildError(f"SOURCE_DATE_EPOCH={epoch} is not a date this machine can represent") from None

_SCRIPT_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


class EncodedArray(np.ndarray):
    """A read-only NumPy array that carries its own JSON text, exactly as ``json.dumps(a.tolist(),
    separators=(",", ":"))`` would write it — for numbers that were decoded from that text and
    checked, so that writing them into a page costs a copy, not an encoding (a pretrained
    model's 72 heads are most of what a lab page's scripts carry). Arrays made from it (views,
    slices, ``astype``) are plain: they do not carry the text."""

    json: str | None = None

    @classmethod
    def of(cls, array: np.ndarray, text: str) -> "EncodedArray":
        out = np.asarray(array).view(cls)
        out.json = text
        out.flags.writeable = False
        return out

    def __array_finalize__(self, obj) -> None:
        self.json = None

    def __reduce__(self):  # pickled as the plain array it holds
        return np.asarray(self).__reduce__()


class JSONText:
    """JSON text that :func:`json_for_script` writes as it is where ``data`` holds this object:
    for code that writes its numbers' JSON faster than :mod:`json` and exactly as it would
    (``generator.kinds.attention.numbers``), so that the page costs a copy, not an encoding."""

    __slots__ = ("json",)

    def __init__(self, text: str):
        self.json = text


def json_for_script(data: Any) -> Markup:
    """Serialise ``data`` for a ``<script type="application/json">`` (or ld+json) block.

    Keys are sorted and floats use Python's shortest round-trip form, so output is
    deterministic. NumPy arrays and scalars are written as the lists and numbers they hold
    (computed data stays in arrays until here; an :class:`EncodedArray` or a :class:`JSONText` as
    the text it carries).
    ``<``, ``>``, ``&`` and U+2028/U+2029 are escaped, so no string can close
    the script element or break a JavaScript parser. NaN and infinities are refused.
    """
    try:
        text, encoded = _json_with_marks(data, sort_keys=True)
    except ValueError as exc:
        raise BuildError(f"cannot embed data in the page: {exc}") from None
    for char, escape in _SCRIPT_ESCAPES:  # str.replace is much faster than str.translate here
        text = text.replace(char, escape)
    return Markup(_unmark(text, encoded))  # digits, commas and brackets: nothing to escape


def compact_json(data: Any) -> str:
    """``json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``, keys in
    their order and nothing escaped, with what :func:`json_for_script` writes as its text
    (:class:`EncodedArray`, :class:`JSONText`) written so too. Raises ValueError for NaN."""
    return _unmark(*_json_with_marks(data, sort_keys=False))


def _json_with_marks(data: Any, sort_keys: bool) -> tuple[str, list[str]]:
    """Compact JSON of ``data`` with a mark where each text it carries goes, and those texts."""
    encoded: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, (EncodedArray, JSONText)) and value.json is not None:
            encoded.append(value.json)
            return f"{_ENCODED_MARK}{len(encoded) - 1}"
        return _json_default(value)

    text = json.dumps(data, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=default)
    if encoded and text.count(_ENCODED_MARK) != len(encoded):  # the data holds the mark itself
        encoded.clear()
        text = json.dumps(data, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                          default=_json_default)
    return text, encoded


def _unmark(text: str, encoded: list[str]) -> str:
    return _ENCODED_RE.sub(lambda m: encoded[int(m.group(1))], text) if encoded else text


# Stands for an EncodedArray's text while json writes the rest of the data.
_ENCODED_MARK = "\ue003encoded-array-"
_ENCODED_RE = re.compile(f'"{_ENCODED_MARK}(\\d+)"')


def _json_default(value: Any) -> Any:
    """JSON for what :mod:`json` does not know: NumPy arrays and scalars (``tolist``/``item``)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, JSONText):
        return json.loads(value.json)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@dataclass(frozen=True)
class Page:
    """What every template knows about the page it renders."""

    path: str  # output path of the page's folder, e.g. "labs/attention/" ("" for the index)
    title: str
    description: str
    canonical: str
    root: str  # relative prefix from this page to the site root, e.g. "../../"
    og_type: str
    jsonld: Markup
    lang: str


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
        concatenated in file-name order; ``later/<name>.js`` (``static/js/later/``), each minified
        alone, for a page to add when a part that needs it comes in (the ``later`` filter); plus
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
            if name.startswith(".") or not f.is_file():
                continue
            if inside is not None and _escapes(f, inside, problems):
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


def lazy_script(name: str, variable: str, data: Any) -> tuple[str, bytes]:
    """A fingerprinted classic script that sets ``window.Labs.data[variable]`` to ``data``; the widget
    adds it with ``Labs.util.load`` when needed (a classic script loads from file:// too)."""
    script = f"((window.Labs||={{}}).data||={{}}).{variable}={json_for_script(data)};\n".encode()
    return fingerprint(name, script), script


def minified(path: Path) -> str:
    """The script (``.js``) or stylesheet (``.css``) at ``path``, minified. Kept for the process
    while the file's modification time and size stay the same: every lab of a kind ships the same
    code, and minifying it again for each one cost more than the rest of some of its parts."""
    stat = path.stat()
    return _minified(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _minified(path: Path, mtime_ns: int, size: int) -> str:
    minify = rcssmin.cssmin if path.suffix == ".css" else rjsmin.jsmin
    return minify(path.read_text(encoding="utf-8"))


def fingerprint(name: str, data: bytes) -> str:
    """``site.css`` → ``site.3f2a9c1e.css``: a new URL whenever the content changes."""
    digest = hashlib.sha256(data).hexdigest()[:8]
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.{digest}.{ext}" if dot and posixpath.basename(stem) else f"{name}.{digest}"


def inline_html(html: Any) -> Markup:
    """Rendered Markdown without the one ``<p>`` around it, so that it runs on from what precedes it
    (a quiz prompt after its number); anything else as it is."""
    html = str(html)
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        html = html[3:-4]
    return Markup(html)


class _Watched:
    """A lab as the index and topic pages see it: each attribute they read of it is noted in
    ``seen``. Those pages are a function of what they read, so a rebuild (``labs serve``) renders
    them again only when one of those attributes changed, whatever the theme's templates read."""

    __slots__ = ("_lab", "_seen")

    def __init__(self, lab: Lab, seen: set[str]):
        self._lab, self._seen = lab, seen

    def __getattr__(self, name: str) -> Any:
        self._seen.add(name)
        return getattr(self._lab, name)


class Renderer:
    def __init__(self, content: Content, theme: Theme, payloads: dict[str, dict], base_url: str | None = None):
        self.content = content
        self.theme = theme
        self.payloads = payloads
        self.site = content.site
        self.base_url = (base_url if base_url is not None else self.site.base_url) or ""
        if self.base_url and not self.base_url.endswith("/"):
            self.base_url += "/"
        self.warnings: list[str] = []  # printed by the build, never fatal
        # Every attribute of a lab that the index and topic pages read, as they render (see _Watched).
        self.shown_fields: set[str] = {"slug", "topic"}
        self.asset_data = theme.assets()
        # Only the scripts and stylesheets built from static/css and static/js are fingerprinted;
        # other files keep their names.
        self.asset_names = {
            name: (f"assets/{fingerprint(name, data)}" if name.startswith(("site.", "kind-", "later/")) else f"assets/{name}")
            for name, data in self.asset_data.items()
        }

    # -- helpers for templates ------------------------------------------------------------
    def _url_helpers(self, root: str) -> tuple[Callable, Callable]:

        def asset(name: str) -> str:
            if name not in self.asset_names:
                raise BuildError(f"theme asset {name!r} not found", display_path(self.theme.folder / "static"))
            return root + self.asset_names[name]

        def url(kind: str, slug: str | None = None) -> str:
            if kind == "index":
                return root or "./"
            if kind == "lab":
                return f"{root}labs/{slug}/"
            if kind == "topic":
                return f"{root}topics/{slug}/"
            raise BuildError(f"unknown url kind {kind!r} in a template")

        return asset, url

    def _absolute(self, page_path: str) -> str:
        return f"{self.base_url}{page_path}" if self.base_url else ""

    def _page(self, path: str, title: str, description: str, og_type: str, jsonld: Any) -> Page:
        return Page(
            path=path,
            title=title,
            description=description,
            canonical=self._absolute(path),
            root="../" * path.count("/"),
            og_type=og_type,
            jsonld=json_for_script(jsonld),
            lang=self.site.language,
        )

    def _render(self, template: str, page: Page, **extra: Any) -> bytes:
        asset, url = self._url_helpers(page.root)
        html = self.theme.render(
            template,
            site=self.site,
            page=page,
            asset=asset,
            has_asset=self.asset_names.__contains__,
            url=url,
            labs_total=len(self.content.labs),
            # The same few bytes on every page, whatever the number of labs: a page lists no other lab.
            site_json=json_for_script({"storage": PROGRESS_STORAGE_KEY, "total": len(self.content.labs)}),
            **extra,
        )
        return html.encode("utf-8")

    # -- pages --------------------------------------------------------------------------
    def lab_jsonld(self, lab: Lab, page_url: str) -> dict:
        topic = self.content.topic(lab.topic)
        resource: dict[str, Any] = {
            "@type": "LearningResource",
            "name": f"{lab.label} · {lab.title}" + (f" — {lab.subtitle}" if lab.subtitle else ""),
            "description": lab.summary,
            "learningResourceType": "interactive lab",
            "inLanguage": self.site.language,
            "about": topic.title,
            "isAccessibleForFree": True,
        }
        faq = {
            "@type": "FAQPage",
            "mainEntity": [
                {"@type": "Question", "name": item.question,
                 "acceptedAnswer": {"@type": "Answer", "text": item.answer_text}}
                for item in lab.faq
            ],
        }
        quiz = {
            "@type": "Quiz",
            "name": f"{lab.title}: quick check",
            "about": topic.title,
            "hasPart": [self._question_jsonld(q, get_kind(lab.kind)) for q in lab.quiz.questions],
        }
        graph = [resource, faq, quiz]
        if page_url:
            resource["url"] = page_url
            faq["url"] = page_url + "#faq"
            quiz["url"] = page_url + "#quiz"
        return {"@context": "https://schema.org", "@graph": graph}

    @staticmethod
    def _question_jsonld(q, kind: LabKind) -> dict:
        correct = [o.text for o in q.options if o.correct]
        wrong = [o.text for o in q.options if not o.correct]
        types = {"single": "Multiple choice", "multiple": "Checkbox"}
        return {
            "@type": "Question",
            "eduQuestionType": types[q.kind] if q.kind in types else kind.jsonld_question_type(q.kind),
            "text": q.prompt_text,
            "acceptedAnswer": [{"@type": "Answer", "text": t} for t in correct],
            "suggestedAnswer": [{"@type": "Answer", "text": t} for t in wrong],
        }

    def lab_files(self, lab: Lab, prev_lab: Lab | None, next_lab: Lab | None) -> dict[str, bytes]:
        """A lab's page, plus the files its kind writes beside it (scripts loaded on demand)."""
        path = f"labs/{lab.slug}/"
        kind = get_kind(lab.kind)
        data = kind.page(lab, self.payloads[lab.slug])
        files = {path + name: blob for name, blob in data.files.items()}
        title = f"{lab.label} · {lab.title}" + (f" — {lab.subtitle}" if lab.subtitle else "") + f" | {self.site.title}"
        page = self._page(path, title, lab.summary, "article", self.lab_jsonld(lab, self._absolute(path)))
        files[path + "index.html"] = self._render(
            "lab.html",
            page,
            lab=lab,
            kind=kind,
            payload=self.payloads[lab.slug],
            topic=self.content.topic(lab.topic),
            lab_json=json_for_script(data.embedded),
            prev_lab=prev_lab,
            next_lab=next_lab,
        )
        self._check_weight(lab, kind, data.embedded, files[path + "index.html"])
        return files

    def _check_weight(self, lab: Lab, kind: LabKind, embedded: Any, html: bytes) -> None:
        """Warn at the sentence (or whatever the kind names) when a lab page's first visit — the
        page and the theme files it links to — is over the page budget and that part is at least
        half the budget: a long first sentence embeds n² numbers per head."""
        weight = len(html) + sum(len(self.asset_data[name]) for name, url in self.asset_names.items()
                                 if f'/{url}"'.encode() in html or f'"{url}"'.encode() in html)
        if weight <= FIRST_VISIT_BUDGET:
            return
        part = kind.heavy_part(lab, embedded)
        if part is None or part[3] * 2 < FIRST_VISIT_BUDGET:
            return
        path, line, column, size = part
        self.warnings.append(
            f"{display_path(path)}:{line}:{column}: warning: the first visit of labs/{lab.slug}/ weighs "
            f"{weight / 1000:.0f} KB, over the {FIRST_VISIT_BUDGET // 1000} KB page budget, {size / 1000:.0f} KB "
            "of it this sentence's numbers (the first sentence's are embedded in the page): shorten it, or put "
            "a shorter sentence first")

    def render_lab(self, lab: Lab, prev_lab: Lab | None, next_lab: Lab | None) -> bytes:
        return self.lab_files(lab, prev_lab, next_lab)[f"labs/{lab.slug}/index.html"]

    def render_index(self) -> bytes:
        groups = [(t, self._watched(self.content.labs_in(t.slug))) for t in self.site.topics]
        groups = [(t, labs) for t, labs in groups if labs]
        jsonld = {
            "@context": "https://schema.org",
            "@type": "WebSite",
            "name": self.site.title,
            "description": self.site.description,
            "inLanguage": self.site.language,
        }
        if self.base_url:
            jsonld["url"] = self.base_url
        page = self._page("", self.site.title, self.site.description, "website", jsonld)
        return self._render("index.html", page, groups=groups)

    def render_topic(self, topic: Topic) -> bytes:
        path = f"topics/{topic.slug}/"
        labs = self._watched(self.content.labs_in(topic.slug))
        jsonld = {
            "@context": "https://schema.org",
            "@type": "CollectionPage",
            "name": topic.title,
            "description": topic.blurb,
            "hasPart": [{"@type": "LearningResource", "name": f"{lab.label} · {lab.title}",
                         **({"url": self._absolute(f"labs/{lab.slug}/")} if self.base_url else {})} for lab in labs],
        }
        if self.base_url:
            jsonld["url"] = self._absolute(path)
        page = self._page(path, f"{topic.title} | {self.site.title}", topic.blurb, "website", jsonld)
        return self._render("topic.html", page, topic=topic, labs=labs)

    def _watched(self, labs: Iterable[Lab]) -> list[Lab]:
        return [_Watched(lab, self.shown_fields) for lab in labs]  # type: ignore[misc]

    def render_404(self) -> bytes:
        jsonld = {"@context": "https://schema.org", "@type": "WebPage", "name": "Page not found"}
        # A host serves 404.html at whatever path was asked for, so relative links would break:
        # this page links from the site's root path (the path of base_url, else "/").
        root = urlsplit(self.base_url).path if self.base_url else "/"
        page = Page(path="", title=f"Page not found | {self.site.title}", description="This page does not exist.",
                    canonical="", root=root, og_type="website", jsonld=json_for_script(jsonld),
                    lang=self.site.language)
        return self._render("404.html", page)

    def sitemap(self, paths: list[str]) -> bytes:
        lines = ['<?xml version="1.0" encoding="UTF-8"?>',
                 '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
        lastmod = source_date()  # "" (no lastmod) unless SOURCE_DATE_EPOCH is set
        for path in paths:
            loc = self._absolute(path)
            entry = f"  <url><loc>{_xml(loc)}</loc>"
            if lastmod:
                entry += f"<lastmod>{lastmod}</lastmod>"
            lines.append(entry + "</url>")
        lines.append("</urlset>")
        return ("\n".join(lines) + "\n").encode()

    def robots(self) -> bytes:
        text = "User-agent: *\nAllow: /\n"
        if self.base_url:
            text += f"Sitemap: {self.base_url}sitemap.xml\n"
        return text.encode()

    def render_all(self, rendered: Mapping[str, Mapping[str, bytes]] | None = None) -> dict[str, bytes]:
        """Every output file, by its path inside the site folder. ``rendered`` holds labs' files
        made before (by slug, as :meth:`lab_files` gives them), used instead of rendering them."""
        files: dict[str, bytes] = {}
        for name, data in self.asset_data.items():
            files[self.asset_names[name]] = data
        for kind in self.theme.kinds:
            files.update({f"{SHARED_FOLDER}/{kind.name}/{name}": data for name, data in kind.shared_files().items()})
        labs = self.content.labs
        rendered = rendered or {}
        for i, lab in enumerate(labs):
            if lab.slug in rendered:
                files.update(rendered[lab.slug])
                continue
            files.update(self.lab_files(lab, labs[i - 1] if i > 0 else None, labs[i + 1] if i + 1 < len(labs) else None))
        for topic in self.site.topics:
            files[f"topics/{topic.slug}/index.html"] = self.render_topic(topic)
        files["index.html"] = self.render_index()
        files["404.html"] = self.render_404()
        page_paths = [""] + [f"labs/{lab.slug}/" for lab in labs] + [f"topics/{t.slug}/" for t in self.site.topics]
        if self.base_url:  # a sitemap lists absolute URLs; without base_url there are none to give
            files["sitemap.xml"] = self.sitemap(page_paths)
        files["robots.txt"] = self.robots()
        return files


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
