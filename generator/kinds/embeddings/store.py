"""The stored sentence vectors (``embeddings.json`` in the lab folder) and ``labs embed``, which
writes them, so that a build needs no checkpoint.

The file, one text per line so that a change reads as a small diff::

    {"format": 1, "model": "all-MiniLM-L6-v2", "checkpoint_sha256": "<64 hex>", "dim": 384,
     "pooling": "...",
     "vectors": {
    "A cat is sleeping on the sofa.": {"mean": [384 numbers], "cls": [384 numbers]},
    ...}}

``mean`` is the sentence embedding exactly as sentence-transformers makes it for
all-MiniLM-L6-v2: the last layer's token vectors averaged over the attention mask (every word
piece of one unpadded sentence, [CLS] and [SEP] included), then divided by their length.
``cls`` is the raw last-layer vector of [CLS], likewise normalised: what a model not trained
for sentence embeddings is often (wrongly) used with, kept to measure anisotropy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from generator.kinds import BuildError, Content, Diagnostic, display_path, read_limited

FORMAT = 1
DEFAULT_NAME = "embeddings.json"
POOLING = "mean of the last layer over the attention mask, then L2-normalised (sentence-transformers)"
FETCHED = "all-minilm-l6-v2"  # the checkpoint's name for `labs models fetch`
COMMAND = "labs embed"
MODEL = "all-MiniLM-L6-v2"  # the model the kind's page and docs name: its vectors, and no other's
DIM = 384  # its hidden size: the numbers in each of its vectors
# 52 texts (40 items, 12 queries) of two vectors of 384 numbers are 0.5 MB; a file many times
# that is not one `labs embed` wrote, and is refused on its size before a byte is read.
MAX_BYTES = 16_000_000


def embed_texts(model, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mean-pooled and [CLS] vectors, both L2-normalised: [n, d] float64 each."""
    from generator.models.bert import run_sentence

    means, clss = [], []
    for text in texts:
        _, out = run_sentence(model, text)
        h = out.last_hidden_state.astype(np.float64)  # [pieces, d]
        mean, cls = h.mean(axis=0), h[0]
        means.append(mean / np.linalg.norm(mean))
        clss.append(cls / np.linalg.norm(cls))
    return np.array(means), np.array(clss)


def _number(x: float) -> str:
    """One entry as the file writes it: 8 decimals, trailing zeros dropped, and "0" for anything
    that rounds to zero (never "-0", which reads back as 0 and would be written "0" the next time)."""
    text = f"{x:.8f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "0", "-0") else text


def _numbers(v: Iterable[float]) -> str:
    return "[" + ",".join(_number(x) for x in v) + "]"


def dumps(sha: str, dim: int, vectors: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    head = json.dumps({"format": FORMAT, "model": MODEL, "checkpoint_sha256": sha, "dim": dim,
                       "pooling": POOLING}, ensure_ascii=False)[:-1]
    lines = [f'{json.dumps(text, ensure_ascii=False)}: {{"mean": {_numbers(m)}, "cls": {_numbers(c)}}}'
             for text, (m, c) in sorted(vectors.items())]
    return head + ', "vectors": {\n' + ",\n".join(lines) + "\n}}\n"


def load(path: Path, texts: Sequence[str], at: Diagnostic, where: dict[str, Diagnostic],
         checkpoint: str | None = None) -> tuple[dict, list[Diagnostic]]:
    """The stored vectors of ``texts`` ({text: (mean, cls)}) and the problems: a missing, unreadable or
    stale file is reported at ``at`` (or at the entry in ``where`` whose text has no vector), naming
    the command that fixes it. The file is read under the file policy (a FIFO or a device in its
    place is refused before it is opened, a huge file on its size). Its vectors must be those of
    :data:`MODEL`'s pinned checkpoint, as the page says, and of ``checkpoint`` when the page's live
    search runs a bundle of it (else the learner's query and the items come from two models)."""
    from generator.models.store import pinned_sha256

    shown = display_path(path)
    fix = f"run `{COMMAND}` to compute it from the checkpoint"
    if not os.path.lexists(path):
        return {}, [_at(at, f"{shown} does not exist; {fix}")]
    try:
        data = json.loads(read_limited(path, None, MAX_BYTES, what="a stored-embeddings file").decode("utf-8"))
    except BuildError as exc:
        return {}, [_at(at, f"{shown}: {str(exc).split(' error: ', 1)[-1]}")]
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: also a number of thousands of digits
        return {}, [_at(at, f"{shown} cannot be read ({type(exc).__name__}: {exc}); {fix}")]
    except RecursionError:
        return {}, [_at(at, f"{shown} cannot be read (nested too deeply to be stored vectors); {fix}")]
    if not (isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("vectors"), dict)
            and type(data.get("dim")) is int and data["dim"] > 0):
        return {}, [_at(at, f"{shown} is not a stored-embeddings file of format {FORMAT}; {fix}")]
    sha, pinned = data.get("checkpoint_sha256"), pinned_sha256(FETCHED)
    if data.get("model") != MODEL or sha != pinned:
        return {}, [_at(at, f"{shown} holds the vectors of {_shown(data.get('model'))} (checkpoint {_shown(sha)}), "
                            f"not of {MODEL}'s checkpoint {pinned}, which the page names; {fix}")]
    if data["dim"] != DIM:
        return {}, [_at(at, f"{shown} says its vectors have {data['dim']} numbers; {MODEL}'s have {DIM}; {fix}")]
    if checkpoint is not None and checkpoint != sha:
        return {}, [_at(at, f"{shown} holds the vectors of checkpoint {sha}, but the page's live search runs a "
                            f"bundle of checkpoint {checkpoint[:80]}: the learner's query and the items would "
                            f"come from two models")]
    dim, found, problems = DIM, {}, []
    for text in texts:
        entry = data["vectors"].get(text)
        if entry is None:
            problems.append(_at(where.get(text, at), f"{shown} holds no vector for {text!r} (stale); {fix}"))
            continue
        vectors = _entry(entry, dim)
        if vectors is None:
            problems.append(_at(where.get(text, at), f"{shown}: the vector stored for {text!r} is not {dim} finite "
                                                     f"numbers of length 1; {fix}"))
            continue
        found[text] = vectors
    return found, problems


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _at(d: Diagnostic, message: str) -> Diagnostic:
    return Diagnostic(d.path, d.line, d.column, message, d.source_line)


def checkpoint_sha256(model_dir: Path) -> str:
    digest = hashlib.sha256()
    with open(model_dir / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entry(entry: object, dim: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A stored entry's (mean, cls) if it is two lists of ``dim`` finite numbers of length 1."""
    if not isinstance(entry, dict):
        return None
    vectors = []
    for key in ("mean", "cls"):
        v = entry.get(key)
        if not (isinstance(v, list) and len(v) == dim and all(type(x) in (int, float) for x in v)):
            return None
        a = np.array(v, dtype=np.float64)
        if not (np.isfinite(a).all() and abs(np.linalg.norm(a) - 1) < 1e-5):
            return None
        vectors.append(a)
    return vectors[0], vectors[1]


def refresh(path: Path, texts: Sequence[str], model_dir: Path) -> tuple[int, bool]:
    """Write ``path`` for exactly ``texts``, reusing every well-formed vector already stored for the
    same checkpoint (a malformed, NaN or short one is computed again). A file that already holds
    exactly these texts, well-formed, is left as it is, byte for byte. Returns how many texts were
    computed and whether the file was written."""
    from generator.models.bert import load_model

    sha = checkpoint_sha256(model_dir)
    data: object = None
    try:  # a FIFO, a device or a huge file in its place is an error here (read_limited), not a hang
        if os.path.lexists(path):
            data = json.loads(read_limited(path, None, MAX_BYTES, what="a stored-embeddings file").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # not JSON: every vector is computed again
        pass
    old: dict = {}
    dim = data.get("dim") if isinstance(data, dict) else None
    if (isinstance(data, dict) and data.get("format") == FORMAT and data.get("checkpoint_sha256") == sha
            and isinstance(data.get("vectors"), dict) and type(dim) is int and dim > 0):
        old = {t: v for t, e in data["vectors"].items() if (v := _entry(e, dim)) is not None}
    wanted = list(dict.fromkeys(texts))
    todo = [t for t in wanted if t not in old]
    if not todo and set(data["vectors"]) == set(wanted) and len(old) == len(wanted):
        return 0, False  # nothing changed: the file stays byte for byte as it is
    vectors = {t: old[t] for t in wanted if t in old}
    if todo:
        model = load_model(model_dir)
        means, clss = embed_texts(model, todo)
        vectors.update({t: (m, c) for t, m, c in zip(todo, means, clss)})
    if not all(np.isfinite(m).all() and np.isfinite(c).all() for m, c in vectors.values()):
        raise BuildError("the checkpoint computes NaN or infinite vectors; its weights are damaged",
                         path=display_path(model_dir))
    dim = next(iter(vectors.values()))[0].shape[0] if vectors else 0
    _replace(path, dumps(sha, dim, vectors))
    return len(todo), True


def _replace(path: Path, text: str) -> None:
    """Write ``text`` beside ``path`` and rename it over it: never half a file."""
    target = Path(os.path.realpath(path))
    fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, target)
    except OSError as exc:
        Path(partial).unlink(missing_ok=True)
        raise BuildError(f"cannot write the stored vectors: {exc.strerror}", path=display_path(path)) from None


def add_commands(sub) -> None:
    e = sub.add_parser("embed", help="compute each embeddings lab's sentence vectors into its stored file",
                       description="Run the checkpoint over every item and query of each lab of kind 'embeddings' "
                                   "and store the mean-pooled, normalised vectors in the lab folder "
                                   "(embeddings.json), so builds need no checkpoint. Writes into content/.")
    e.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                   help="content folder (default: content/)")
    e.add_argument("--model", type=Path, default=None, metavar="DIR",
                   help="local all-MiniLM-L6-v2 folder (config.json, model.safetensors, vocab.txt); default: the one "
                        f"`labs models fetch {FETCHED}` fetched")
    e.add_argument("--lab", action="append", metavar="SLUG", help="only this lab (repeatable)")
    e.set_defaults(func=cmd_embed, usage_error=e.error)


def _checkpoint(args: argparse.Namespace) -> Path:
    """The checkpoint folder: --model, else the fetched one (every file checked against its pin)."""
    if args.model is None:
        from generator.models.store import locate

        try:
            return locate(FETCHED)
        except BuildError as exc:
            raise BuildError(f"{str(exc).removeprefix('error: ')}; or name a local checkpoint folder with --model DIR") from None
    if not (args.model / "model.safetensors").is_file():
        raise BuildError(f"{display_path(args.model)}/model.safetensors does not exist: --model names a local "
                         f"checkpoint folder (config.json, model.safetensors, vocab.txt); `labs models fetch {FETCHED}` "
                         f"fetches one, which `labs embed` then uses without --model")
    return args.model


def cmd_embed(args: argparse.Namespace, load: Callable[[Path], Content]) -> int:
    model_dir = _checkpoint(args)
    content = load(args.content)
    labs = [lab for lab in content.labs if lab.kind == "embeddings"]
    if args.lab:
        known = [lab.slug for lab in labs]
        unknown = [slug for slug in args.lab if slug not in known]
        if unknown:
            args.usage_error(f"argument --lab: {unknown[0]!r} is not a lab of kind 'embeddings' in "
                             f"{display_path(args.content)}/ (those are: {', '.join(known) or 'none'})")
        labs = [lab for lab in labs if lab.slug in args.lab]
    if not labs:
        print("no lab of kind 'embeddings'; nothing to do", flush=True)
    for lab in labs:
        texts = lab.spec.texts()
        done, written = refresh(lab.spec.store, texts, model_dir)
        said = (f"{done} of {len(texts)} texts computed, the rest already stored" if written
                else f"unchanged, all {len(texts)} texts already stored")
        print(f"{display_path(lab.spec.store)}: {said}", flush=True)
    return 0
