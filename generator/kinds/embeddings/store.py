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
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from generator.kinds import BuildError, Content, Diagnostic, display_path

FORMAT = 1
DEFAULT_NAME = "embeddings.json"
POOLING = "mean of the last layer over the attention mask, then L2-normalised (sentence-transformers)"
COMMAND = "labs embed --model DIR"


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


def _numbers(v: Iterable[float]) -> str:
    return "[" + ",".join(f"{x:.8f}".rstrip("0").rstrip(".") if x else "0" for x in v) + "]"


def dumps(sha: str, dim: int, vectors: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    head = json.dumps({"format": FORMAT, "model": "all-MiniLM-L6-v2", "checkpoint_sha256": sha, "dim": dim,
                       "pooling": POOLING}, ensure_ascii=False)[:-1]
    lines = [f'{json.dumps(text, ensure_ascii=False)}: {{"mean": {_numbers(m)}, "cls": {_numbers(c)}}}'
             for text, (m, c) in sorted(vectors.items())]
    return head + ', "vectors": {\n' + ",\n".join(lines) + "\n}}\n"


def load(path: Path, texts: Sequence[str], at: Diagnostic, where: dict[str, Diagnostic]) -> tuple[dict, list[Diagnostic]]:
    """The stored vectors of ``texts`` ({text: (mean, cls)}) and the problems: a missing, unreadable or
    stale file is reported at ``at`` (or at the entry in ``where`` whose text has no vector), naming
    the command that fixes it."""
    shown = display_path(path)
    fix = f"run `{COMMAND}` to compute it from the checkpoint"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, [_at(at, f"{shown} does not exist; {fix}")]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return {}, [_at(at, f"{shown} cannot be read ({type(exc).__name__}: {exc}); {fix}")]
    if not (isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("vectors"), dict)
            and isinstance(data.get("dim"), int) and data["dim"] > 0):
        return {}, [_at(at, f"{shown} is not a stored-embeddings file of format {FORMAT}; {fix}")]
    dim, found, problems = data["dim"], {}, []
    for text in texts:
        entry = data["vectors"].get(text)
        if entry is None:
            problems.append(_at(where.get(text, at), f"{shown} holds no vector for {text!r} (stale); {fix}"))
            continue
        try:
            mean, cls = (np.array(entry[k], dtype=np.float64) for k in ("mean", "cls"))
            ok = mean.shape == cls.shape == (dim,) and all(abs(np.linalg.norm(v) - 1) < 1e-5 for v in (mean, cls))
        except (TypeError, ValueError, KeyError):
            ok = False
        if not ok:
            problems.append(_at(where.get(text, at), f"{shown}: the vector stored for {text!r} is not {dim} finite "
                                                     f"numbers of length 1; {fix}"))
            continue
        found[text] = (mean, cls)
    return found, problems


def _at(d: Diagnostic, message: str) -> Diagnostic:
    return Diagnostic(d.path, d.line, d.column, message, d.source_line)


def checkpoint_sha256(model_dir: Path) -> str:
    digest = hashlib.sha256()
    with open(model_dir / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def refresh(path: Path, texts: Sequence[str], model_dir: Path) -> int:
    """Write ``path`` for exactly ``texts``, reusing vectors already stored for the same checkpoint.
    Returns how many texts were computed."""
    from generator.models.bert import load_model

    sha = checkpoint_sha256(model_dir)
    old: dict = {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") == FORMAT and data.get("checkpoint_sha256") == sha:
            old = data["vectors"]
    except (OSError, ValueError, AttributeError):
        pass
    todo = [t for t in dict.fromkeys(texts) if t not in old]
    vectors = {t: (np.array(old[t]["mean"]), np.array(old[t]["cls"])) for t in texts if t in old}
    if todo:
        model = load_model(model_dir)
        means, clss = embed_texts(model, todo)
        vectors.update({t: (m, c) for t, m, c in zip(todo, means, clss)})
    dim = next(iter(vectors.values()))[0].shape[0] if vectors else 0
    assert all(math.isfinite(x) for m, c in vectors.values() for x in (*m, *c))
    path.write_text(dumps(sha, dim, vectors), encoding="utf-8")
    return len(todo)


def add_commands(sub) -> None:
    e = sub.add_parser("embed", help="compute each embeddings lab's sentence vectors into its stored file",
                       description="Run the checkpoint over every item and query of each lab of kind 'embeddings' "
                                   "and store the mean-pooled, normalised vectors in the lab folder "
                                   "(embeddings.json), so builds need no checkpoint. Writes into content/.")
    e.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                   help="content folder (default: content/)")
    e.add_argument("--model", type=Path, required=True, metavar="DIR",
                   help="local all-MiniLM-L6-v2 folder (config.json, model.safetensors, vocab.txt)")
    e.add_argument("--lab", action="append", metavar="SLUG", help="only this lab (repeatable)")
    e.set_defaults(func=cmd_embed)


def cmd_embed(args: argparse.Namespace, load: Callable[[Path], Content]) -> int:
    if not (args.model / "model.safetensors").is_file():
        raise BuildError(f"{display_path(args.model)}/model.safetensors does not exist: --model names a local "
                         f"checkpoint folder (config.json, model.safetensors, vocab.txt)")
    content = load(args.content)
    labs = [lab for lab in content.labs if lab.kind == "embeddings" and (not args.lab or lab.slug in args.lab)]
    if not labs:
        print("no lab of kind 'embeddings'; nothing to do", flush=True)
    for lab in labs:
        texts = lab.spec.texts()
        done = refresh(lab.spec.store, texts, args.model)
        print(f"{display_path(lab.spec.store)}: {done} of {len(texts)} texts computed, the rest already stored",
              flush=True)
    return 0
