"""Lab kinds: what a lab's interactive part is, found through entry points.

A lab names its kind in lab.yaml (``kind: attention``). A kind is a subclass of
:class:`LabKind` registered in the entry-point group ``attention_labs.kinds``::

    [project.entry-points."attention_labs.kinds"]
    attention = "generator.kinds.attention:AttentionKind"

The built-in kinds register themselves exactly so (see pyproject.toml); the generic core —
content, build, render, incremental, serve, CLI — asks :func:`get_kind` for a lab's kind and
never imports one by name. Like MkDocs' ``BasePlugin``, a kind is a handful of hooks with
working defaults; the ones a kind must write are :meth:`~LabKind.read` and
:meth:`~LabKind.compute`.

A kind's package folder (``LabKind.folder``) holds its page parts:

``widget.html``       the template partial included in the lab page's "Try it" section
                      (rendered with ``lab``, ``kind`` and the usual page helpers);
``question.html``     optional: the partial for the kind's own quiz question types;
``*.html``            optional: more partials that these include as ``kinds/<name>/<file>``;
``static/*.js``       its script: classic scripts, minified and concatenated in name order
                      into ``assets/kind-<name>.<hash>.js``, loaded only by its labs' pages;
``static/*.css``      likewise into ``assets/kind-<name>.<hash>.css``.

A theme overrides any of them file by file at ``theme/kinds/<name>/…``. Files a kind reads
itself (e.g. scripts it writes beside a page, from its ``static/later/``) are its own business
and not part of the theme.

A kind's public API is this module — the hooks; the types they take and give (:class:`Lab`,
:class:`Option`, :class:`Content`, :class:`Reader`, :class:`Diagnostic`); the errors a kind raises
or reports (:class:`ContentError`, :class:`BuildError`, :class:`SiteError`, :func:`did_you_mean`,
:func:`display_path`, :func:`regular_problem` and :func:`read_limited` for a file it opens itself); and
:func:`pickled_as_call` for its specs — and :mod:`generator.kinds.helpers` (page data as JSON,
fingerprinted files, the addresses of shared files). Besides these a kind imports only its own
package and the shared model packages, :mod:`generator.models` and :mod:`generator.runtime`:
never the loader, the renderer, a driver or another kind. What a kind needs of the site comes
through its hooks; a command of its own gets the host's content loader (:meth:`add_commands`).
``tests/test_boundaries.py`` holds every kind, and ``examples/kind-plugin``, to this.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import pickle
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

from generator.errors import BuildError, ContentError, Diagnostic, SiteError, did_you_mean, display_path
from generator.filepolicy import read_limited, regular_problem
from generator.model import Content, Lab, Option
from generator.pickling import pickled_as_call
from generator.source import Reader

# A kind's whole view of the generator: the hooks, what they take and give and the errors, here;
# and generator.kinds.helpers for the files and JSON a page carries.
__all__ = ["ENTRY_POINT_GROUP", "BuildError", "Computed", "Content", "ContentError", "Diagnostic", "KindQuestion",
           "Lab", "LabKind", "ModelUse", "Option", "PageData", "Reader", "SiteError", "all_kinds", "did_you_mean",
           "display_path", "get_kind", "kind_names", "pickled_as_call", "read_limited", "regular_problem"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "attention_labs.kinds"


@dataclass(frozen=True)
class KindQuestion:
    """What a kind reads from one quiz question of its own type (the core reads type, id,
    prompt and explanation): the options a learner picks from, exactly as for a built-in
    question, and whatever the kind wants back in :meth:`LabKind.compute`."""

    options: tuple[Option, ...]
    data: Any = None  # picklable; e.g. which sentence, head and query word
    match: str = "all"  # "all": the learner must pick exactly the correct options; "any": one correct one


@dataclass(frozen=True)
class Computed:
    """A kind's computed data for one lab."""

    payload: Any  # JSON-ready; handed back to page() and to the templates as ``payload``
    problems: Sequence[Diagnostic] = ()  # claims or answer keys that the numbers contradict
    notes: Sequence[str] = ()  # said to the author, not errors


@dataclass(frozen=True)
class PageData:
    """What a lab page carries: ``embedded`` goes into ``<script type="application/json"
    id="lab-data">``; each of ``files`` (file name → bytes) is written beside the page, e.g. a
    script the kind's code adds with ``<script src>`` only when a learner asks for it (make one
    with :func:`generator.kinds.helpers.lazy_script`, which also gives its fingerprinted name)."""

    embedded: Any
    files: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelUse:
    """A shared model one lab uses (:meth:`LabKind.models`): ``model`` is its name in
    :data:`generator.models.store.MODELS`, what ``labs models fetch`` fetches when it is given no
    name; ``stored`` are the results of the model the lab reads from its stored file
    (:class:`generator.runtime.decoded.Request` objects), which ``labs decode`` computes."""

    model: str
    stored: tuple[Any, ...] = ()


class LabKind:
    """The interface of a lab kind. Subclass it, set the class attributes, override the hooks.

    Instances are created once per process by the registry and must be stateless: every hook
    is a function of its arguments (labs load and compute in worker processes). Specs,
    question data and payloads must pickle.
    """

    #: keys of lab.yaml this kind reads (besides the ones every lab has)
    keys: ClassVar[tuple[str, ...]] = ()
    #: the ones of ``keys`` a lab of this kind must have
    required: ClassVar[tuple[str, ...]] = ()
    #: quiz question types of its own, beyond ``single`` and ``multiple``
    question_types: ClassVar[tuple[str, ...]] = ()
    #: the required and optional keys of each of its question types, besides type/id/prompt/explanation
    question_keys: ClassVar[Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    #: the ones of ``question_types`` whose options the build shuffles as it does single and multiple
    #: (generator.quizorder); the others keep their own order (e.g. the words of a sentence)
    shuffled_question_types: ClassVar[tuple[str, ...]] = ()
    #: heading of the lab page's "Try it" section and its table-of-contents entry
    widget_title: ClassVar[str] = "Try it"
    #: one line for `labs new --help` and `labs kinds`
    description: ClassVar[str] = ""
    #: part of the build cache's key: change it when the kind's output changes for the same input
    #: in a way its files do not show (the cache also hashes the kind's package folder)
    version: ClassVar[str] = "1"

    name: str = ""  # the entry-point name, set by the registry

    @property
    def folder(self) -> Path:
        """The folder with this kind's ``widget.html`` and ``static/``: its module's folder."""
        return Path(inspect.getfile(type(self))).parent

    # -- content ----------------------------------------------------------------------
    def read(self, reader: Reader, lab_dir: Path) -> Any | None:
        """Validate this kind's keys of lab.yaml (the document's root mapping is ``()``) and
        return a picklable spec, or None after reporting every mistake through ``reader``
        (``reader.error(where, message)`` gives ``path:line:col``)."""
        raise NotImplementedError

    def read_question(self, reader: Reader, where: tuple, qtype: str, qid: str, spec: Any) -> KindQuestion | None:
        """Read one quiz question of one of this kind's ``question_types`` at ``where`` in quiz.yaml.
        ``spec`` is what :meth:`read` returned (None if lab.yaml had mistakes)."""
        raise NotImplementedError

    # -- compute ----------------------------------------------------------------------
    def compute(self, lab: Lab, options: Mapping[str, Any]) -> Computed:
        """Compute the lab's data from ``lab.spec`` and check ``lab``'s claims and its questions of
        this kind's types against it. ``options`` are the values of :meth:`add_build_arguments`."""
        raise NotImplementedError

    def compute_inputs(self, lab: Lab, options: Mapping[str, Any]) -> tuple[bytes, Sequence[Path]]:
        """Everything :meth:`compute` reads, for the content hash that decides when ``labs serve``
        computes again: bytes, and files whose bytes count too. The default pickles the spec,
        the kind's questions and the options; a kind that reads files must name them."""
        own = tuple(q for q in lab.quiz.questions if q.type in self.question_types)
        return pickle.dumps((lab.spec, own, sorted(options.items())), pickle.HIGHEST_PROTOCOL), ()

    # -- page -------------------------------------------------------------------------
    def page(self, lab: Lab, payload: Any) -> PageData:
        """What the lab page embeds and what it may load later. Default: embed everything."""
        return PageData(payload)

    def shared_files(self) -> Mapping[str, bytes]:
        """Files that every lab page of this kind may load and that are the same for every lab —
        code, and tables that do not depend on the lab — by file name (fingerprint it with
        :func:`generator.kinds.helpers.fingerprint`). The build writes them once, into
        ``assets/kinds/<kind>/``, instead of beside every page; a browser then fetches each once
        for the whole site. A page names one as :func:`generator.kinds.helpers.shared_src` gives
        it. Default: none."""
        return {}

    def site_files(self, labs: Sequence[Lab], options: Mapping[str, Any], store: Path | None) -> Mapping[str, bytes]:
        """Files that depend on what this kind's ``labs`` (every lab of the kind that loaded) ask
        for and that labs share — of this kind or of others — by path inside the site, under
        ``assets/``: e.g. a model runtime and its weights, which a tokens lab and an attention lab
        load from the same place (:mod:`generator.runtime`). The build writes each path once; two
        kinds that give the same path must give the same bytes. ``store`` is a folder of the build
        cache the kind may keep what it made in, so a warm build does not make it again (None:
        no cache, e.g. ``--no-cache``). ``options`` as in :meth:`compute`. Raise ContentError for
        a lab's mistake, BuildError for anything else. ``labs`` gives each lab as it is reached (a
        large site's labs are not all held as objects at once): keep only what the files depend on,
        not the labs or their specs. Default: none."""
        return {}

    def models(self, lab: Lab) -> Sequence[ModelUse]:
        """The shared models ``lab`` uses, and what it reads of each from its stored file: a
        :class:`ModelUse` per model. ``labs models fetch`` (no names) fetches every model the site's
        labs use; ``labs decode`` computes every stored result they read
        (:mod:`generator.runtime.decoded`). It is asked of labs as far as they loaded — a lab whose
        stored results are missing is one with mistakes — so it must work from ``lab.spec`` alone.
        Default: none."""
        return ()

    def heavy_part(self, lab: Lab, embedded: Any) -> tuple[Path, int, int, int] | None:
        """The part of ``embedded`` (what :meth:`page` embeds) an author controls and that can
        grow without bound: the file, line and column where it is written, and its bytes. The
        build warns there when the page's first visit is over budget because of it. None: none."""
        return None

    def jsonld_question_type(self, qtype: str) -> str:
        """schema.org ``eduQuestionType`` of one of the kind's question types."""
        return "Multiple choice"

    # -- authoring --------------------------------------------------------------------
    def scaffold(self, slug: str, title: str) -> Mapping[str, str]:
        """Files of a new lab of this kind: ``lab.yaml`` holds only this kind's keys (the core
        adds the common ones above them); ``questions`` (optional) is YAML list items appended
        to the new quiz; other names are extra files for the lab folder."""
        return {}

    def add_build_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options this kind adds to ``labs build``, ``check`` and ``serve``; their values reach
        :meth:`compute` in ``options`` (keyed by ``dest``). Must not clash with another kind's."""

    def add_commands(self, subparsers: Any) -> None:
        """Commands of this kind's own (``subparsers.add_parser(...)``, then
        ``set_defaults(func=...)``). The host calls ``func(args, load)``: ``load(folder)`` reads and
        validates a content folder as a build does and returns its :class:`Content` (every lab
        loaded), or raises ContentError listing every mistake; a command that needs the site's
        labs loads them through it, never with the loader itself. The function returns an exit
        code and may raise SiteError."""


@cache
def _entry_points() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        if ep.name in found and found[ep.name].value != ep.value:
            log.warning("lab kind %r is registered twice (%s, %s); using the first", ep.name,
                        found[ep.name].value, ep.value)
            continue
        found.setdefault(ep.name, ep)
    return found


def kind_names() -> tuple[str, ...]:
    """Every registered kind, sorted."""
    return tuple(sorted(_entry_points()))


@cache
def get_kind(name: str) -> LabKind:
    """The kind registered as ``name``. Raises KeyError for an unknown name, BuildError for a
    kind whose package fails to import or is not a LabKind."""
    ep = _entry_points()[name]
    try:
        cls = ep.load()
    except Exception as exc:  # a third-party package's import error must not be a traceback
        raise BuildError(f"lab kind {name!r} ({ep.value}) cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, LabKind)):
        raise BuildError(f"lab kind {name!r} ({ep.value}) is not a subclass of generator.kinds.LabKind")
    kind = cls()
    kind.name = name
    return kind


def all_kinds() -> tuple[LabKind, ...]:
    return tuple(get_kind(name) for name in kind_names())
