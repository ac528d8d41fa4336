"""Render stage: the content model → HTML pages, fingerprinted assets, sitemap and robots.txt,
drawn with a :class:`~generator.theme.Theme`.

Nothing here touches the disk except reading the theme: pages come back as a mapping of
output paths to bytes, and the build decides where they go.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Callable
from urllib.parse import urlsplit

from markupsafe import Markup

from generator.errors import BuildError, display_path
from generator.hostheaders import EMBED_NAME
from generator.kinds import LabKind, get_kind
from generator.kinds.helpers import SHARED_FOLDER
from generator.webfiles import fingerprint, json_for_script
from generator.model import PROGRESS_STORAGE_KEY, Content, Lab, Topic
from generator.theme import Theme

FIRST_VISIT_BUDGET = 115_000  # bytes, raw: a lab page and the theme files it links to (theme/README.md, "Page weight")


def source_date() -> str:
    """ISO date from SOURCE_DATE_EPOCH for reproducible builds, or "" (no timestamps at all)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch.isdigit():
        return ""
    try:
        return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        raise BuildError(f"SOURCE_DATE_EPOCH={epoch} is not a date this machine can represent") from None


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


class _Watched:
    """A lab as the index and topic pages see it, or a lab page's pager its neighbour: each
    attribute they read of it is noted in ``seen``. Those pages are a function of what they read,
    so a rebuild (``labs serve``) renders them again only when one of those attributes changed,
    whatever the theme's templates read."""

    __slots__ = ("_lab", "_seen")

    def __init__(self, lab: Lab, seen: set[str]):
        self._lab, self._seen = lab, seen

    def __getattr__(self, name: str) -> Any:
        self._seen.add(name)
        return getattr(self._lab, name)


class Renderer:
    """Draws a site's pages with a theme. Holds nothing of a lab between calls but its warnings."""

    def __init__(self, content: Content, theme: Theme, base_url: str | None = None):
        self.content = content
        self.theme = theme
        self.site = content.site
        self.base_url = (base_url if base_url is not None else self.site.base_url) or ""
        if self.base_url and not self.base_url.endswith("/"):
            self.base_url += "/"
        self.warnings: list[str] = []  # printed by the build, never fatal
        # Every attribute of a lab that the index and topic pages read, as they render (see _Watched).
        self.shown_fields: set[str] = {"slug", "topic"}
        self.beside_fields: set[str] = {"slug"}  # and every attribute a lab page reads of its neighbours
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
        # No FAQPage: Google shows FAQ rich results only for well-known government and health sites
        # (since August 2023), so for a lab it would be 170 B gzip of every first visit for nothing.
        quiz = {
            "@type": "Quiz",
            "name": f"{lab.title}: quick check",
            "about": topic.title,
            "hasPart": [self._question_jsonld(q, get_kind(lab.kind)) for q in lab.quiz.questions],
        }
        graph = [resource, quiz]
        if page_url:
            resource["url"] = page_url
            quiz["url"] = page_url + "#quiz"
        return {"@context": "https://schema.org", "@graph": graph}

    @staticmethod
    def _question_jsonld(q, kind: LabKind) -> dict:
        correct = [o.text for o in q.options if o.correct]
        wrong = [o.text for o in q.options if not o.correct]
        types = {"single": "Multiple choice", "multiple": "Checkbox"}
        return {
            "@type": "Question",
            "eduQuestionType": types[q.type] if q.type in types else kind.jsonld_question_type(q.type),
            "text": q.prompt_text,
            "acceptedAnswer": [{"@type": "Answer", "text": t} for t in correct],
            "suggestedAnswer": [{"@type": "Answer", "text": t} for t in wrong],
        }

    def lab_files(self, lab: Lab, payload: Any, prev_lab: Lab | None, next_lab: Lab | None) -> dict[str, bytes]:
        """A lab's page, drawn from its computed ``payload``, plus the files its kind writes beside it
        (scripts loaded on demand), by output path. A page over the page budget adds a warning."""
        path = f"labs/{lab.slug}/"
        kind = get_kind(lab.kind)
        data = kind.page(lab, payload)
        files = {path + name: blob for name, blob in data.files.items()}
        self.warnings.extend(lab.quiz.warnings)
        title = f"{lab.label} · {lab.title}" + (f" — {lab.subtitle}" if lab.subtitle else "") + f" | {self.site.title}"
        page = self._page(path, title, lab.summary, "article", self.lab_jsonld(lab, self._absolute(path)))
        files[path + "index.html"] = self._render(
            "lab.html",
            page,
            lab=lab,
            kind=kind,
            payload=payload,
            topic=self.content.topic(lab.topic),
            lab_json=json_for_script(data.embedded),
            prev_lab=self._beside(prev_lab),
            next_lab=self._beside(next_lab),
        )
        self._check_weight(lab, kind, data.embedded, files[path + "index.html"])
        # Its embed page: the interactive part alone, beside the page, so it names the same files
        # the same way; its canonical address is the lab page's (docs/embedding.md).
        embed = Page(path=path, title=f"{lab.label} · {lab.title}: {kind.widget_title} | {self.site.title}",
                     description=lab.summary, canonical=page.canonical, root=page.root, og_type="article",
                     jsonld=Markup(""), lang=self.site.language)
        files[path + EMBED_NAME] = self._render("embed.html", embed, lab=lab, kind=kind, payload=payload,
                                                topic=self.content.topic(lab.topic), lab_json=json_for_script(data.embedded),
                                                prev_lab=self._beside(prev_lab), next_lab=self._beside(next_lab))
        return files

    def _beside(self, lab: Lab | None) -> Lab | None:
        return _Watched(lab, self.beside_fields) if lab is not None else None  # type: ignore[return-value]

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

    def site_files(self) -> dict[str, bytes]:
        """The files a site has once, whatever its labs, by output path: the theme's assets and each
        kind's shared files (:meth:`~generator.kinds.LabKind.shared_files`, under ``assets/kinds/``)."""
        files = {self.asset_names[name]: data for name, data in self.asset_data.items()}
        for kind in self.theme.kinds:
            files.update({f"{SHARED_FOLDER}/{kind.name}/{name}": data for name, data in kind.shared_files().items()})
        return files

    def render_site(self, lab_files: Mapping[str, Mapping[str, bytes]]) -> dict[str, bytes]:
        """Every output file, by its path inside the site folder: :meth:`site_files`, each lab's files
        (``lab_files``, by slug, as :meth:`lab_files` gives them: every lab of the site must be
        there), the topic pages, the index, the 404 page, the sitemap and robots.txt."""
        files = self.site_files()
        labs = self.content.labs
        for lab in labs:
            files.update(lab_files[lab.slug])
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
