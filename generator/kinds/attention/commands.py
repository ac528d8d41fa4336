"""The attention kind's own commands: ``labs heads`` and ``labs attention``, and the tables
``labs attention`` prints."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds.attention import teaching
from generator.models.bert import load_model, run_sentence
from generator.kinds.attention.realheads import largest_remainder
from generator.kinds import BuildError, Content, ContentError, did_you_mean, display_path


def add_commands(sub: Any) -> None:
    h = sub.add_parser("heads", help="compute real model heads into each attention lab's cache file",
                       description="Run the checkpoint over every sentence of each lab with a 'model:' section and "
                                   "store the attention in the lab's cache file, so builds need no checkpoint. "
                                   "This is the one command that writes into content/.")
    h.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                   help="content folder (default: content/)")
    h.add_argument("--model", type=Path, default=None, metavar="DIR",
                   help="local BERT-family checkpoint folder (default: each lab's model.checkpoint)")
    h.add_argument("--lab", action="append", metavar="SLUG", help="only this lab (repeatable)")
    h.set_defaults(func=cmd_heads)

    a = sub.add_parser("attention", help="print a pretrained model's (or the designed heads') attention for a sentence",
                       description="Run a BERT-family checkpoint from a local folder (config.json, model.safetensors, "
                                   "vocab.txt) through our NumPy forward pass and print its attention. With --designed, "
                                   "print the designed heads' ÷√d weights for a tagged sentence (as in lab.yaml) instead.")
    a.add_argument("sentence", metavar="SENTENCE")
    a.add_argument("--model", type=Path, default=None, metavar="DIR", help="local checkpoint folder (required without --designed)")
    a.add_argument("--designed", action="store_true",
                   help="the designed heads of generator/kinds/attention/teaching.py; SENTENCE is tagged as in lab.yaml")
    a.add_argument("--quantized", action="store_true",
                   help="what the page's in-page model computes: the 8-bit bundle in DIR (a bundle folder, or a "
                        "checkpoint quantized as a build does) run in NumPy; same output as --model")
    a.add_argument("--layer", type=int, default=None, metavar="L", help="layer, counted from 0")
    a.add_argument("--head", default=None, metavar="H",
                   help="head, counted from 0 (with --designed: a head id, e.g. syntax)")
    a.add_argument("--causal", action="store_true", help="--designed only: no word sees a later one")
    a.add_argument("--source", default=None, metavar="TEXT",
                   help="--designed only: cross attention, keys and values from this tagged sentence")
    a.add_argument("--json", action="store_true", help='print {"tokens": [...], "attentions": [layers][heads][n][n]}; '
                   'with --designed {"tokens": [...], "tags": [...], "heads": {"syntax": [n][n], ...}}')
    a.set_defaults(func=cmd_attention, usage_error=a.error)


def cmd_attention(args: argparse.Namespace, load: Callable[[Path], Content]) -> int:
    if args.designed:
        for flag, given in (("--model", args.model is not None), ("--layer", args.layer is not None),
                            ("--quantized", args.quantized)):
            if given:
                args.usage_error(f"argument {flag}: not allowed with --designed")
        heads = designed_heads(args.source is not None)
        if args.head is not None and args.head not in teaching.HEAD_IDS:
            args.usage_error(f"argument --head: unknown designed head {args.head!r}{did_you_mean(args.head, teaching.HEAD_IDS)}; "
                             f"heads: {', '.join(teaching.HEAD_IDS)}")
        if args.causal and args.source is not None:
            args.usage_error("argument --causal: not allowed with --source (cross attention has no causal mask here)")
        kind = "cross" if args.source is not None else "causal" if args.causal else "self"
        print(inspect_designed(args.sentence, source=args.source, kind=kind,
                               heads=(args.head,) if args.head else heads, as_json=args.json), flush=True)
        return 0
    for flag, given in (("--causal", args.causal), ("--source", args.source is not None)):
        if given:
            args.usage_error(f"argument {flag}: only with --designed")
    if args.model is None:
        args.usage_error("the following arguments are required: --model (or --designed)")
    head = args.head
    if head is not None:
        if not re.fullmatch(r"[+-]?\d+", head.strip()):
            args.usage_error(f"argument --head: invalid int value: {head!r}")
        head = int(head)
    print(inspect_attention(args.model, args.sentence, layer=args.layer, head=head, as_json=args.json,
                            quantized=args.quantized), flush=True)
    return 0


def designed_heads(cross: bool) -> tuple[str, ...]:
    """The designed heads shown for a sentence: those of a lab that lists none, and alignment for
    a cross sentence (in a single sentence it mostly finds the word itself) — as the page's "Your sentence"."""
    return teaching.HEAD_IDS if cross else teaching.DEFAULT_HEADS


def _parse(text: str, what: str) -> tuple[teaching.Word, ...]:
    """``text`` parsed by :func:`teaching.parse_sentence`; its mistakes as one BuildError, one line each."""
    try:
        return teaching.parse_sentence(text)
    except teaching.TaggingError as exc:
        raise BuildError("\nerror: ".join(f"{what}, character {p.offset + 1}: {p.message}" for p in exc.problems)) from None


def inspect_designed(text: str, *, source: str | None = None, kind: str = "self",
                     heads: Sequence[str] = teaching.DEFAULT_HEADS, as_json: bool = False) -> str:
    """What ``labs attention --designed`` prints: each designed head's ÷√d weights for ``text``.

    ``text`` (and ``source``, for cross attention) are tagged as in lab.yaml. JSON:
    ``{"tokens": [...], "tags": [...], "heads": {id: [n_q][n_k]}}`` (and ``"source": {"tokens", "tags"}``
    for cross), each row a query's weights, unrounded; otherwise a table per head in % (largest
    remainder, rows sum to 100). Raises :class:`BuildError` for a word without a tag, an unknown tag,
    an empty sentence or one over ``teaching.MAX_WORDS`` words.
    """
    queries = _parse(text, "sentence")
    keys = _parse(source, "source") if source is not None else None
    results = teaching.compute(queries, keys, kind=kind, heads=heads)
    keys = keys or queries
    if as_json:
        data: dict[str, Any] = {"tokens": [w.text for w in queries], "tags": [w.role for w in queries],
                                "heads": {hid: r.weights.tolist() for hid, r in results.items()}}
        if kind == "cross":
            data["source"] = {"tokens": [w.text for w in keys], "tags": [w.role for w in keys]}
        return json.dumps(data, ensure_ascii=False)
    out = []
    for hid, r in results.items():
        percent = largest_remainder(np.where(r.mask, r.weights, 0.0), 100)
        q_tokens, k_tokens = [w.text for w in queries], [w.text for w in keys]
        col = max(4, min(8, max(len(t) for t in k_tokens))) + 1
        label = min(16, max(len(t) for t in q_tokens)) + 4
        lines = [f"{teaching.head(hid).name} head ({kind}): row = query word, columns = where its attention goes, "
                 f"in % (rows sum to 100{'; masked: -' if kind == 'causal' else ''}).", "",
                 " " * label + "".join(f"{_short(t, col - 1):>{col}}" for t in k_tokens)]
        for i, (token, row) in enumerate(zip(q_tokens, percent)):
            cells = "".join(f"{(str(v) if v else ('-' if not r.mask[i, j] else '.')):>{col}}" for j, v in enumerate(row))
            lines.append(f"{i:>3} {_short(token, label - 4):<{label - 4}}{cells}")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def refresh(spec, widget, model_dir: Path | None) -> tuple[list[str], Path, int]:
    """Recompute a lab's cache file (``spec``: its ModelSpec) from the checkpoint; returns the
    sentences computed, the file and how many sentences' 8-bit figures (``drift``) were computed."""
    from generator.kinds.attention import cache as cachefile
    from generator.kinds.attention.inpage import refresh_drift
    from generator.kinds.attention.headfinder import model_sentences, sentence_text
    from generator.kinds.attention.realmodel import CHECKPOINT_HELP

    folder = model_dir or spec.checkpoint
    if folder is None:
        raise BuildError(f"no checkpoint: pass --model DIR or set model.checkpoint; {CHECKPOINT_HELP}", spec.at[0])
    sha = cachefile.checkpoint_sha256(folder)
    cache = cachefile.load_cache(spec.cache)
    model = load_model(folder)
    texts = [sentence_text(s) for s in model_sentences(widget)] + [sentence_text(f) for f in spec.finder_sentences]
    fresh, computed = cachefile.refresh_cache(cache, model, sha, texts)
    drift, drift_computed = refresh_drift(spec, cache, fresh, sha, texts)
    cachefile.save_cache(spec.cache, {**fresh, "drift": drift, "report": report_to_store(spec, widget, fresh, sha)})
    return computed, spec.cache, drift_computed


def report_to_store(spec, widget, cache, sha: str) -> dict | None:
    """The head finder's report and learned matches to store beside the entries (:mod:`.headreport`);
    None where the build would report a mistake in the relations instead."""
    from generator.kinds.attention import headreport
    from generator.kinds.attention.headfinder import model_sentences, sentence_text

    by_text = cache["entries"].get(sha, {})
    entries = {s.id: {**by_text[sentence_text(s)], "attention": np.asarray(by_text[sentence_text(s)]["attention"],
                                                                             dtype=np.int16)}
               for s in [*model_sentences(widget), *spec.finder_sentences]}
    try:
        return headreport.report_of(spec, widget, sha, entries)
    except ContentError:
        return None


def cmd_heads(args: argparse.Namespace, load: Callable[[Path], Content]) -> int:
    from generator.kinds.attention.headfinder import model_sentences

    content = load(args.content)
    labs = [lab for lab in content.labs if lab.kind == "attention" and lab.spec.model is not None
            and (not args.lab or lab.slug in args.lab)]
    if not labs:
        print("no attention lab has a 'model:' section; nothing to do", flush=True)
    for lab in labs:
        computed, path, drift = refresh(lab.spec.model, lab.spec.widget, args.model)
        total = len(model_sentences(lab.spec.widget)) + len(lab.spec.model.finder_sentences)
        print(f"{display_path(path)}: {len(computed)} of {total} sentence{'s' * (total != 1)} computed, "
              f"the rest already cached" + (f"; the 8-bit bundle's difference computed for {drift}" if drift else ""),
              flush=True)
    return 0


def _short(token: str, width: int) -> str:
    return token if len(token) <= width else token[: width - 1] + "…"


def _patterns(weights: np.ndarray) -> dict[str, np.ndarray]:  # [..., n, n] -> {pattern: [...] mean share}
    """Mean share (over query rows) of attention to [CLS], [SEP], self, previous and next token."""
    n = weights.shape[-1]
    diagonal = np.diagonal(weights, axis1=-2, axis2=-1)
    return {
        "CLS": weights[..., :, 0].mean(axis=-1),
        "SEP": weights[..., :, n - 1].mean(axis=-1),
        "self": diagonal.mean(axis=-1),
        "prev": np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).mean(axis=-1),
        "next": np.diagonal(weights, offset=1, axis1=-2, axis2=-1).mean(axis=-1),
    }


def _summary_grid(tokens: Sequence[str], attentions: np.ndarray) -> str:  # [L, H, n, n]
    n_layers, n_heads = attentions.shape[:2]
    patterns = _patterns(attentions)  # name -> [L, H]
    names = ["self", "prev", "next"]
    stacked = np.stack([patterns[name] for name in names])  # [3, L, H]
    best = stacked.argmax(axis=0)  # [L, H]
    to_special = patterns["CLS"] + patterns["SEP"]  # [L, H]
    cells = [
        [
            f"{names[best[l, h]]} {round(100 * stacked[best[l, h], l, h]):>2}{'*' if to_special[l, h] > 0.5 else ' '}"
            for h in range(n_heads)
        ]
        for l in range(n_layers)
    ]
    width = max(len(c) for row in cells for c in row) + 2
    lines = [
        f"{len(tokens)} word pieces: {' '.join(tokens)}",
        f"{n_layers} layers x {n_heads} heads. Each cell: the head's strongest positional habit, as the mean share",
        "of attention (%) a token gives to itself (self), to the token before (prev) or after (next);",
        "* = more than half of the head's attention goes to [CLS]/[SEP], BERT's usual 'no-op'.",
        "Use --layer L for a layer's heads in detail, --layer L --head H for the full table.",
        "",
        "        " + "".join(f"{'head ' + str(h):>{width}}" for h in range(n_heads)),
    ]
    lines += [f"layer {l:<2}" + "".join(f"{c:>{width}}" for c in cells[l]) for l in range(n_layers)]
    return "\n".join(lines) + "\n"


def _layer_breakdown(tokens: Sequence[str], weights: np.ndarray, layer: int, n_layers: int) -> str:  # [H, n, n]
    n_heads, n, _ = weights.shape
    patterns = _patterns(weights)  # name -> [H]
    real = np.ones(n, dtype=bool)
    real[[0, n - 1]] = False
    lines = [
        f"Layer {layer} (of 0-{n_layers - 1}): mean share of each head's attention (%) going to",
        "[CLS], [SEP], the token itself, the previous and the next token; and its strongest link",
        "between two real tokens. Use --head H for the full table.",
        "",
        f"{'head':>4}  {'[CLS]':>5}  {'[SEP]':>5}  {'self':>5}  {'prev':>5}  {'next':>5}  strongest link",
    ]
    for h in range(n_heads):
        link = "-"
        if real.sum() >= 2:
            inner = np.where(real[:, None] & real[None, :] & ~np.eye(n, dtype=bool), weights[h], -1.0)
            q, k = np.unravel_index(int(inner.argmax()), inner.shape)
            link = f"{tokens[int(q)]} -> {tokens[int(k)]} {round(100 * float(weights[h, q, k]))}%"
        shares = "  ".join(f"{round(100 * float(patterns[name][h])):>5}" for name in ("CLS", "SEP", "self", "prev", "next"))
        lines.append(f"{h:>4}  {shares}  {link}")
    return "\n".join(lines) + "\n"


def _matrix_table(tokens: Sequence[str], weights: np.ndarray, layer: int, head: int) -> str:  # [n, n]
    percent = largest_remainder(weights, 100)
    col = max(4, min(8, max(len(t) for t in tokens))) + 1
    label = min(16, max(len(t) for t in tokens)) + 4
    lines = [
        f"Layer {layer}, head {head}: row = query token, columns = where its attention goes, in % (rows sum to 100).",
        "",
        " " * label + "".join(f"{_short(t, col - 1):>{col}}" for t in tokens),
    ]
    for i, (token, row) in enumerate(zip(tokens, percent)):
        cells = "".join(f"{(str(v) if v else '.'):>{col}}" for v in row)
        lines.append(f"{i:>3} {_short(token, label - 4):<{label - 4}}{cells}")
    return "\n".join(lines) + "\n"


def inspect_attention(
    model_dir: Path,
    sentence: str,
    layer: int | None = None,
    head: int | None = None,
    as_json: bool = False,
    quantized: bool = False,
) -> str:
    """What ``labs attention`` prints: a checkpoint's attention over one sentence's word pieces.

    - ``as_json``: ``{"tokens": [...], "attentions": [layers][heads][n][n]}`` over the word
      pieces, [CLS]/[SEP] included, weights rounded to 6 decimals; always every layer and
      head, so indexes stay meaningful (``layer``/``head`` are still checked).
    - no layer/head: a grid of every head's strongest positional habit (self, previous or
      next token) with its share, starred where over half goes to [CLS]/[SEP];
    - ``layer`` only: that layer's heads, each with all five shares and its strongest link;
    - ``layer`` and ``head``: the full table, tokens as rows and columns, in %.

    Raises :class:`BuildError` for a bad model folder (naming the file), an empty sentence,
    one longer than the model reads, a layer/head out of range, or a head without a layer.

    ``quantized``: the 8-bit model the page runs (:func:`generator.runtime.bundle.reference_model`),
    from a bundle folder (``bundle.json``) or a checkpoint quantized exactly as a build does.
    """
    if not sentence.strip():
        raise BuildError("the sentence is empty")
    model = _quantized(Path(model_dir)) if quantized else load_model(Path(model_dir))
    n_layers, n_heads = model.config.num_hidden_layers, model.config.num_attention_heads
    for name, value, count in (("layer", layer, n_layers), ("head", head, n_heads)):
        if value is not None and (type(value) is not int or not 0 <= value < count):
            raise BuildError(f"{name} {value!r} does not exist: this model has {name}s 0-{count - 1}")
    if head is not None and layer is None and not as_json:
        raise BuildError("a head is numbered within its layer: give --layer too")
    encoding, output = run_sentence(model, sentence)
    tokens = list(encoding.tokens)
    attentions = output.attentions  # [L, H, n, n]
    if as_json:
        return json.dumps(
            {"tokens": tokens, "attentions": np.round(attentions.astype(np.float64), 6).tolist()},
            ensure_ascii=False,
        )
    if layer is None:
        return _summary_grid(tokens, attentions)
    if head is None:
        return _layer_breakdown(tokens, attentions[layer], layer, n_layers)
    return _matrix_table(tokens, attentions[layer, head], layer, head)


def _quantized(folder: Path):
    """The in-page model of ``folder``: a bundle folder read as it is, a checkpoint quantized first."""
    from generator.runtime.bundle import BUNDLE_FILE, reference_model
    from generator.runtime.site import bundle_at, bundle_from_checkpoint

    bundle = bundle_at(folder) if (folder / BUNDLE_FILE).is_file() else bundle_from_checkpoint(folder, None)
    return reference_model(bundle)
