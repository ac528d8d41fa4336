"""Getting a model into a site: fetch its pinned files (:mod:`generator.models.store`) and, for a
model the page runs from a bundle (all-minilm-l6-v2), export that bundle into the site's
``content/models/<name>/`` (:mod:`generator.runtime.bundle`). ``labs models fetch`` calls
:func:`fetch` for each model the site's labs name (:func:`named_by_content`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from generator.errors import BuildError, display_path
from generator.filepolicy import file_problem
from generator.models.store import MODELS, fetch_files, locate, source
from generator.runtime.bundle import export_bundle, read_bundle


def _content_folder(content: Path) -> Path:
    content = Path(content)
    if not content.is_dir():
        raise BuildError("content folder not found: run this in a site's folder, or pass --content DIR",
                         path=display_path(content))
    return content


def export_site_bundle(name: str, content: Path, report: Callable[[str], None] = print) -> Path:
    """Write the page bundle of a fetched checkpoint into ``content/models/<name>/``, unless the
    bundle there is already complete and made from the pinned checkpoint."""
    model = source(name)
    checkpoint = locate(name)
    content = _content_folder(content)
    out = content / "models" / name
    problem = file_problem(out, content)
    if problem is not None:
        raise BuildError(problem.message)
    pinned = next(f.sha256 for f in model.files if f.name == "model.safetensors")
    if out.exists():
        try:
            bundle = read_bundle(out)
        except BuildError as exc:
            report(f"{name}: the bundle in {display_path(out)}/ is incomplete or damaged ({exc}); writing it again")
        else:
            made_from = bundle.meta.get("checkpoint", {}).get("sha256")
            if made_from == pinned:
                report(f"{name}: the bundle in {display_path(out)}/ is up to date")
                return out
            raise BuildError(f"this bundle was made from another checkpoint (SHA-256 {made_from}); "
                             f"{name} is {pinned}. Move the folder away to export {name} here",
                             path=display_path(out))
    report(f"{name}: exporting the page's int8 bundle into {display_path(out)}/ …")
    export_bundle(checkpoint, out)
    total = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    report(f"{name}: bundle written ({total / 1e6:.1f} MB); the site's pages serve it with its LICENSE")
    return out


def fetch(name: str, content: Path = Path("content"), report: Callable[[str], None] = print) -> Path:
    """Fetch one model (and for a bundle model, export its bundle into ``content``); its path."""
    model = source(name)
    if model.bundle:
        _content_folder(content)  # before a download it could not be used for
    folder = fetch_files(name, report)
    if model.bundle:
        return export_site_bundle(name, content, report)
    return folder / model.main if model.main else folder


def named_by_content(content: Path) -> list[str]:
    """The known models a site's labs name: every model whose name appears, as a whole word, in
    a ``content/labs/*/lab.yaml`` (a ``bundle:`` path ending in it, a model key naming it).
    :class:`BuildError` if ``content`` is not a folder."""
    content = _content_folder(content)
    labs = content / "labs"
    text = []
    if labs.is_dir():
        for lab_yaml in sorted(labs.glob("*/lab.yaml")):
            if file_problem(lab_yaml, content) is None:
                try:
                    text.append(lab_yaml.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
    joined = "\n".join(text)
    return [name for name in MODELS if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", joined)]
