"""``labs export qti|scorm``: build the site in memory (every claim and answer key checked, as
``labs check`` does; labs unchanged since the last build come from the build cache), then write
one package per lab into the output folder, each whole or not at all."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from generator.build import build_files
from generator.errors import display_path
from generator.export import qti, scorm
from generator.export.quizpage import questions_of
from generator.export.zips import write_zip, zip_bytes
from generator.speed.buildcache import BuildCache

FORMATS = ("qti", "scorm")


def export(fmt: str, content_dir: Path, theme_dir: Path | None, output: Path, base_url: str | None = None,
           report: Callable[[str], None] = lambda _: None, options: Mapping[str, Any] | None = None,
           cache_dir: Path | None = None) -> list[Path]:
    """Write ``fmt`` packages (``qti`` or ``scorm``) of every lab into ``output``: the paths written.
    Raises ContentError/BuildError as a build does (then nothing is written)."""
    assert fmt in FORMATS, fmt
    cache = BuildCache(cache_dir) if cache_dir is not None else None
    site, content = build_files(Path(content_dir), theme_dir, base_url, report, options, cache)
    base = (base_url if base_url is not None else content.site.base_url) or ""
    if base and not base.endswith("/"):
        base += "/"
    made: list[tuple[Path, bytes]] = []
    names: dict[str, set[str]] = {}  # the file names each text file of the site holds, found once
    for lab in content.labs:
        page = f"labs/{lab.slug}/index.html"
        title = f"{lab.label} · {lab.title}" + (f" — {lab.subtitle}" if lab.subtitle else "")
        if fmt == "qti":
            questions = questions_of(site[page].decode("utf-8"))
            if not questions:
                report(f"note: {lab.slug} has no quiz: no QTI package")
                continue
            files = qti.package(lab.slug, title, questions, base + page[:-len("index.html")] if base else "")
        else:
            files, nowhere = scorm.package(site, lab.slug, title, base, names)
            if nowhere:
                report(f"note: {lab.slug}: {len(nowhere)} link(s) of its page lead out of the package and the "
                       "site has no base_url to send them to")
        made.append((Path(output) / f"{lab.slug}.zip", zip_bytes(files)))
    for path, data in made:
        write_zip(path, data)
        report(f"wrote {display_path(path)} ({len(data) / 1000:,.0f} KB)")
    return [path for path, _ in made]
