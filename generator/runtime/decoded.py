"""What the decoder computed for a lab's authored inputs, stored beside the lab (``decoded.json``).

A lab that shows the decoder's numbers for texts its author wrote (lab 08's next-token
distributions; per-token probabilities, logit-lens readings or attention for another) does not
run the model when the site is built. ``labs decode`` runs it once, when the texts or the model
change, and writes the results into the lab's folder; a build reads them from there, so it needs
no model and never runs one. This module is that store, for every kind that uses the decoder:

* a kind says what it needs with :class:`Request` objects (a :class:`Computation` and its inputs,
  and where the author wrote them), through the hook ``LabKind.models`` (a
  ``generator.kinds.ModelUse`` per model, its ``stored`` requests);
* :func:`load` reads a lab's file (once per process while it stays the same) and :func:`find`
  or :func:`lookup` give one request's result — or a :class:`Diagnostic` at the request's place
  saying what is missing or stale and naming the command that fixes it;
* :func:`refresh` computes what is missing or stale and writes the file (``labs decode``,
  :mod:`generator.runtime.commands`, which gets the labs and their requests from the host).

The file, UTF-8, one entry per line, so that a change reads as a small diff::

    {"format":"attention-labs/decoded","model":{"name":"smollm2-135m-instruct","sha256":"<64 hex>"},"version":1,
    "entries":{
    "<key>":{"computation":"next-token","inputs":{"chat":false,"text":"The cat sat on the"},"result":{...},"version":1},
    ...
    }}

``model`` names the model (:data:`generator.models.store.MODELS`) and the SHA-256 of the file
it was run from. An entry's key is the SHA-256 of its computation's name and its inputs as
canonical JSON (:func:`key_of`): an entry is found by what it was computed from, never by where
the author wrote it. Everything is written deterministically: keys sorted, no spaces, no
timestamps, and a float as the shortest decimal that reads back to the same double (JSON's,
Python's ``repr``), so a computation rounds its floats to the precision it needs before it
returns them (:func:`rounded`). NaN and infinities are refused.

An entry is *missing* when no entry has its key, *stale* when the file was computed with another
model or file than the pinned one (its SHA-256 differs from :func:`generator.models.store.source`'s)
or by another version of the computation. Either is an error at the request's ``path:line:col``
naming ``labs decode --lab SLUG``; a damaged file is an error at its own line.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import BuildError, ContentError, Diagnostic, display_path
from generator.filepolicy import regular_problem
from generator.models import store as model_store

FILE_NAME = "decoded.json"  # in the lab's folder
FORMAT = "attention-labs/decoded"
VERSION = 1
COMMAND = "labs decode"


@dataclass(frozen=True)
class Computation:
    """Something a model computes for a lab: ``run(model, inputs)`` returns a JSON-ready result
    (dicts, lists, strings, booleans, whole numbers, finite floats rounded as the kind needs).

    ``run`` must be a module-level function (requests pickle into worker processes) and a pure
    function of the model and the inputs. ``name`` is unique among the computations of one model;
    raise ``version`` whenever the result's meaning or layout changes, which makes every stored
    result of an older version stale."""

    name: str
    version: int
    run: Callable[[Any, Mapping[str, Any]], Any] = field(compare=False)


@dataclass(frozen=True)
class Request:
    """One result a lab reads from its stored file: ``computation`` run by ``model`` on ``inputs``.

    ``inputs`` are JSON-ready and are all the computation reads (they make the entry's key); ``at``
    is where the author wrote them (a :class:`Diagnostic` whose message is ignored): a missing or
    stale entry is reported there."""

    model: str  # a name of generator.models.store.MODELS, e.g. "smollm2-135m-instruct"
    computation: Computation
    inputs: Mapping[str, Any]
    at: Diagnostic = field(compare=False)

    @property
    def key(self) -> str:
        return key_of(self.computation.name, self.inputs)


def canonical(value: Any) -> str:
    """``value`` as the store writes it: sorted keys, no spaces, UTF-8 text, finite floats only.
    Raises ValueError for NaN or an infinity, TypeError for what JSON has no form for."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def key_of(computation: str, inputs: Mapping[str, Any]) -> str:
    """An entry's key: the SHA-256 (hex) of ``{"computation": …, "inputs": …}`` in canonical JSON."""
    return hashlib.sha256(canonical({"computation": computation, "inputs": inputs}).encode("utf-8")).hexdigest()


def rounded(values, decimals: int) -> list:  # [...] -> nested lists of floats
    """``values`` (an array of any shape) as nested lists of floats rounded to ``decimals``: what a
    computation returns for the store, which writes each float as its shortest decimal."""
    array = np.round(np.asarray(values, dtype=np.float64), decimals)
    array[array == 0] = 0.0  # -0.0 would be written "-0.0"
    return array.tolist()


# ---- the file ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    computation: str
    version: int
    inputs: Mapping[str, Any]
    result: Any
    line: int  # in the file, for messages


@dataclass(frozen=True)
class Store:
    """One lab's stored file: its model, its entries by key. ``exists`` is False for a lab
    whose file is not there yet (then every request is missing)."""

    path: Path
    model: str | None
    sha256: str | None
    entries: Mapping[str, Entry]
    exists: bool = True


def path_for(lab_dir: Path) -> Path:
    """Where a lab's stored file is: ``decoded.json`` in its folder."""
    return Path(lab_dir) / FILE_NAME


def load(lab_dir: Path) -> Store:
    """The stored file of the lab in ``lab_dir``, read and checked once per process while its size
    and time stay the same. A missing file is an empty store (``exists`` False). Raises
    :class:`ContentError` at the file's line for a file that is not a store, or an entry that is
    damaged (say, edited by hand: its key no longer matches its inputs)."""
    path = path_for(lab_dir)
    problem = regular_problem(path)
    if problem is not None:
        raise ContentError([problem])
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return Store(path, None, None, {}, exists=False)
    except OSError as exc:
        raise ContentError([Diagnostic(display_path(path), 1, 1, f"cannot read the stored file: {exc.strerror}")]) from None
    return _load(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _load(path: str, size: int, mtime_ns: int) -> Store:
    return parse(Path(path), Path(path).read_bytes())


def parse(path: Path, data: bytes) -> Store:
    """The store in ``data`` (the bytes of the file at ``path``, named in messages)."""
    shown = display_path(path)
    fix = f"run `{COMMAND} --lab {path.parent.name}` to write it again"

    def error(line: int, message: str) -> ContentError:
        return ContentError([Diagnostic(shown, line, 1, f"{message}; {fix}")])

    try:
        text = data.decode("utf-8")
        document = json.loads(text)
    except UnicodeDecodeError:
        raise error(1, "the stored file is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", 1)
        raise error(line, f"the stored file is not JSON ({getattr(exc, 'msg', exc)})") from None
    if not (isinstance(document, dict) and document.get("format") == FORMAT):
        raise error(1, f"not a stored-decoder file (its 'format' must be {FORMAT!r})")
    if document.get("version") != VERSION:
        raise error(1, f"a stored-decoder file of version {document.get('version')!r}; this build reads version {VERSION}")
    model, entries = document.get("model"), document.get("entries")
    if not (isinstance(model, dict) and isinstance(model.get("name"), str) and isinstance(model.get("sha256"), str)):
        raise error(1, "'model' must be {\"name\": …, \"sha256\": …}")
    if not isinstance(entries, dict):
        raise error(1, "'entries' must be an object of entries by key")
    lines = _entry_lines(text)
    found: dict[str, Entry] = {}
    for key, entry in entries.items():
        line = lines.get(key, 1)
        if not (isinstance(entry, dict) and set(entry) == {"computation", "inputs", "result", "version"}
                and isinstance(entry["computation"], str) and isinstance(entry["inputs"], dict)
                and type(entry["version"]) is int):
            raise error(line, "an entry must be {\"computation\", \"inputs\", \"result\", \"version\"}")
        if key_of(entry["computation"], entry["inputs"]) != key:
            raise error(line, f"the entry's key does not match its inputs {_short(entry['inputs'])} (edited by hand?)")
        found[key] = Entry(entry["computation"], entry["version"], entry["inputs"], entry["result"], line)
    return Store(path, model["name"], model["sha256"], found)


def _entry_lines(text: str) -> dict[str, int]:
    """The line of each entry in a file as :func:`dumps` writes it (one entry a line)."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > 68 and line.startswith('"') and line[65:68] == '":{':
            lines[line[1:65]] = number
    return lines


def dumps(model: str, sha256: str, entries: Mapping[str, tuple[str, int, Mapping[str, Any], Any]]) -> str:
    """The file's text for ``entries`` (key → (computation, version, inputs, result)). Raises
    ValueError for a result with NaN or an infinity."""
    head = canonical({"format": FORMAT, "model": {"name": model, "sha256": sha256}, "version": VERSION})
    rows = [f"{canonical(key)}:{canonical({'computation': c, 'inputs': i, 'result': r, 'version': v})}"
            for key, (c, v, i, r) in sorted(entries.items())]
    return head[:-1] + ',\n"entries":{\n' + ",\n".join(rows) + ("\n" if rows else "") + "}}\n"


def _short(value: Any, limit: int = 60) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- lookup ------------------------------------------------------------------------------------------


def describe(request: Request) -> str:
    """The request in a few words for messages: its computation and its inputs, shortened."""
    return f"{request.computation.name} {_short(request.inputs)}"


def find(stored: Store, request: Request) -> tuple[Any, Diagnostic | None]:
    """``request``'s result in ``stored``, or None and a diagnostic at ``request.at`` saying why
    there is none (missing, or stale) and naming the command that computes it."""
    problem = staleness(stored, request)
    if problem is not None:
        return None, replace(request.at, message=problem)
    return stored.entries[request.key].result, None


def lookup(stored: Store, request: Request) -> Any:
    """``request``'s result in ``stored``; :class:`ContentError` at ``request.at`` if it has none."""
    result, problem = find(stored, request)
    if problem is not None:
        raise ContentError([problem])
    return result


def staleness(stored: Store, request: Request) -> str | None:
    """Why ``stored`` has no usable result for ``request`` (a message), or None when it has one."""
    shown = display_path(stored.path)
    fix = f"run `{COMMAND} --lab {stored.path.parent.name}` to compute it with {request.model}"
    what = describe(request)
    if not stored.exists:
        return f"nothing is stored for {what}: {shown} does not exist; {fix}"
    pinned = model_store.pinned_sha256(request.model) if request.model in model_store.MODELS else None
    if stored.model != request.model:
        return f"{shown} was computed with {stored.model}, not {request.model}, so {what} is stale; {fix}"
    if pinned is not None and stored.sha256 != pinned:
        return (f"{shown} was computed with another file of {request.model} (SHA-256 {stored.sha256[:12]}…, the "
                f"pinned one is {pinned[:12]}…), so {what} is stale; {fix}")
    entry = stored.entries.get(request.key)
    if entry is None:
        return f"{shown} holds nothing for {what}; {fix}"
    if entry.version != request.computation.version:
        return (f"{shown}:{entry.line}: {what} was computed by version {entry.version} of "
                f"{request.computation.name!r}; this build reads version {request.computation.version}; {fix}")
    return None


# ---- computing: labs decode ----------------------------------------------------------------------------


def load_model(name: str) -> Any:
    """The fetched model ``name`` loaded for computations (a :class:`generator.models.llama.LlamaModel`
    for a GGUF), once per process. Raises BuildError naming ``labs models fetch NAME`` when the
    model is not fetched or its file is altered."""
    from generator.models import llama

    return llama.cached_model(model_store.locate(name))


def refresh(lab_dir: Path, requests: Sequence[Request], model_loader: Callable[[str], Any] | None = None,
            report: Callable[[str], None] = lambda line: None) -> tuple[Path, int]:
    """Make the lab's stored file hold exactly ``requests``' results: reuse the entries that are
    neither missing nor stale, compute the others with the model, drop entries no request asks
    for any more, and write the file (beside it first, then renamed over it). Returns the file
    and how many entries were computed. Raises BuildError when the model is needed and not
    fetched, or when the requests name two models (one file holds one model's results).
    ``model_loader(name)`` loads the model (default :func:`load_model`)."""
    models = sorted({r.model for r in requests})
    if len(models) > 1:
        raise BuildError(f"the stored file of {display_path(lab_dir)} holds one model's results; its labs ask "
                         f"for {', '.join(models)}")
    path = path_for(lab_dir)
    if not requests:
        return path, 0
    name = models[0]
    sha256 = model_store.pinned_sha256(name)
    try:
        old = load(lab_dir)
    except ContentError:  # a damaged file is written again from scratch
        old = Store(path, None, None, {}, exists=False)
    entries: dict[str, tuple[str, int, Mapping[str, Any], Any]] = {}
    todo = []
    for request in requests:
        if request.key in entries:
            continue
        if staleness(old, request) is None:
            kept = old.entries[request.key]
            entries[request.key] = (kept.computation, kept.version, kept.inputs, kept.result)
        else:
            todo.append(request)
    if todo:
        model = (model_loader or load_model)(name)
        for request in todo:
            if request.key in entries:
                continue
            report(f"computing {describe(request)}")
            result = request.computation.run(model, request.inputs)
            entries[request.key] = (request.computation.name, request.computation.version,
                                    json.loads(canonical(request.inputs)), result)
    text = dumps(name, sha256, entries)
    if not old.exists or path.read_text(encoding="utf-8") != text:
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
        except OSError as exc:
            raise BuildError(f"cannot write the stored file: {exc.strerror}", path=display_path(path)) from None
        finally:
            temporary.unlink(missing_ok=True)
    return path, len({r.key for r in todo})


def needed(uses: Iterable[Any]) -> list[Request]:
    """The stored requests of a lab's model uses (``generator.kinds.ModelUse``), in order, once each."""
    seen: dict[str, Request] = {}
    for use in uses:
        for request in use.stored:
            seen.setdefault(request.key, request)
    return list(seen.values())
