"""Benchmark: our NumPy BERT forward pass next to transformers' BertModel, same machine, same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_bert.py --model DIR

Run it with those two variables unset: some machines here set them to work around old
OpenBLAS bugs, and they pin current OpenBLAS to slower kernels (the script prints which
kernel numpy's BLAS runs). Never change them in tests.

What is measured, per case (a 16-word sentence; exactly 128 word pieces):

- time: the forward pass alone (token ids in, every layer's attention out; tokenising is
  not included on either side), median of ``--runs`` runs after a warm-up. The two sides
  take turns in three blocks of runs, so background load hits both alike (run-by-run
  alternation makes their busy-waiting thread pools fight; see :func:`timed`). transformers runs in eval
  mode under ``torch.inference_mode()`` with ``attn_implementation="eager"`` and
  ``output_attentions=True`` — the same work as ours.
- peak memory, ours: tracemalloc's peak during one forward pass (NumPy reports its
  buffers to tracemalloc; the weights, loaded beforehand, are not counted).
- peak memory, transformers: torch allocates outside tracemalloc's sight, so we run one
  forward pass under ``torch.profiler`` with ``profile_memory=True`` and take the peak of
  the running sum of every operator's own allocations minus frees, in start-time order.
  That is an approximation (an operator's allocations are placed at its start), but it
  counts the same thing: tensors alive during the pass, returned attentions included.
  (Resident-set growth was tried and dropped: after the warm-up, both sides reuse memory
  malloc already holds, and it reads 0.)

Prints a Markdown table. Without torch/transformers installed only our side is measured.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generator.models.bert import bert_forward, load_model
from generator.models.wordpiece import encode

SIXTEEN_WORDS = "The old lighthouse keeper watched the storm roll in while ships hurried back to the harbour."
LONG_TEXT = (
    "Attention lets every token look at every other token and decide how much each one matters. "
    "In a trained encoder some heads track the previous word, others find the verb of a subject, "
    "and many park their attention on the separator token when they have nothing useful to do. "
) * 8


BLOCKS = 3  # the two sides take turns in blocks of runs, not run by run (see timed)
SETTLE_SECONDS = 0.3


def timed(run, count: int) -> list[float]:
    """Seconds taken by each of ``count`` calls of ``run``, after a pause.

    The pause matters on a small machine: OpenBLAS's and PyTorch's OpenMP worker threads
    both busy-wait for a while after a call, and when the two sides alternate run by run
    each side's spinning threads steal the cores from the other (we saw 10x slowdowns on
    2 cores). Blocks separated by a pause let the other side's threads go to sleep first.
    """
    time.sleep(SETTLE_SECONDS)
    times = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return times


def torch_profiler_peak(run) -> float:
    """MiB: peak of the running sum of per-operator CPU allocations during ``run()`` (see above)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    live = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        live += event.self_cpu_memory_usage
        peak = max(peak, live)
    return peak / 2**20


def tracemalloc_peak(run) -> float:
    """MiB: peak of traced allocations during ``run()``."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (peak - base) / 2**20


def blas_description() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    parts = [
        f"{i.get('internal_api')} {i.get('version')} {i.get('architecture', '?')} x{i.get('num_threads')}"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    return "; ".join(parts) or "no BLAS found"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a BERT folder: config.json, model.safetensors, vocab.txt")
    parser.add_argument("--runs", type=int, default=21, help="timed runs per case and side (median reported)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    model = load_model(args.model)
    our_load = time.perf_counter() - started

    sentence_ids = np.array(encode(SIXTEEN_WORDS, model.tokenizer).ids)
    long_ids = np.array(encode(LONG_TEXT, model.tokenizer).ids[:127] + (model.tokenizer.vocab["[SEP]"],))
    assert len(SIXTEEN_WORDS.split()) == 16 and len(long_ids) == 128
    cases = [("16-word sentence", sentence_ids), ("128 tokens", long_ids)]

    torch_model = torch = None
    their_load = None
    try:
        import torch
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
        started = time.perf_counter()
        torch_model = transformers.BertModel.from_pretrained(str(args.model), attn_implementation="eager").eval()
        their_load = time.perf_counter() - started
    except ImportError as exc:
        print(f"(transformers/torch not available: {exc}; measuring our side only)\n")

    print(f"Machine: {platform.machine()}, Python {platform.python_version()}, NumPy {np.__version__}")
    print(f"NumPy BLAS: {blas_description()}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(var):
            print(f"WARNING: {var}={os.environ[var]} is set; it slows NumPy. Run with env -u {var}.")
    if torch is not None:
        print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}")
    print(f"Model: {args.model} — {model.config.num_hidden_layers} layers, {model.config.num_attention_heads} heads, "
          f"d={model.config.hidden_size}")
    print(f"Load: ours {our_load * 1000:.0f} ms" + (f", transformers {their_load * 1000:.0f} ms" if their_load else ""))
    print()

    rows = []
    for name, ids in cases:
        def ours(ids=ids):
            return bert_forward(model.weights, model.config, ids)

        theirs = None
        if torch_model is not None:
            batch = torch.tensor(ids[None, :], dtype=torch.long)

            def theirs(batch=batch):
                with torch.inference_mode():
                    return torch_model(batch, output_attentions=True)

        ours()
        if theirs:
            theirs()
        our_times, their_times = [], []
        for block in range(BLOCKS):
            our_times += timed(ours, args.runs // BLOCKS)
            if theirs:
                their_times += timed(theirs, args.runs // BLOCKS)
        our_ms = statistics.median(our_times) * 1000
        their_ms = statistics.median(their_times) * 1000 if theirs else None
        our_peak = tracemalloc_peak(ours)
        their_peak = torch_profiler_peak(theirs) if theirs else None
        rows.append((name, len(ids), our_ms, their_ms, our_peak, their_peak))

    def mib(x):
        return "n/a" if x is None else f"{x:.1f} MiB"

    print("| case | tokens | ours (NumPy) | transformers (eager) | ours / transformers | peak memory, ours (tracemalloc) | peak memory, transformers (torch.profiler) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, our_ms, their_ms, our_peak, their_peak in rows:
        ratio = f"{our_ms / their_ms:.2f}×" if their_ms else "n/a"
        theirs_text = f"{their_ms:.1f} ms" if their_ms else "n/a"
        print(f"| {name} | {n} | {our_ms:.1f} ms | {theirs_text} | {ratio} | {mib(our_peak)} | {mib(their_peak)} |")
    print(f"\nMedians of {args.runs // BLOCKS * BLOCKS} runs per side in {BLOCKS} alternating blocks; forward pass only (ids -> all attentions).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
