"""Time the NumPy decoder (generator/models/llama.py) on the fetched SmolLM2-135M-Instruct.

    python benchmarks/bench_decoder.py [--threads N] [--repeats R]

Measures, in one process: loading the GGUF (parse, dequantize 135M weights to float32, build the
tokenizer); the prefill of a 20-token prompt (median of R runs); one decode step after it with
the KV cache (median of 5·R); the logit lens of the prefill (30 layers' last-token logits); the
peak resident memory. BLAS threads are set before NumPy loads (default 1: the matrices are small,
and on a shared 2-core machine a second thread mostly waits). The load average is printed
before and after, as every figure on this machine needs it.
"""

from __future__ import annotations

import argparse
import os
import sys

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
parser.add_argument("--repeats", type=int, default=9, help="prefill runs; decode runs are 5x this (default 9)")
args = parser.parse_args()
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = str(args.threads)  # read by OpenBLAS when NumPy loads

import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from generator.models import bpe, llama, store  # noqa: E402

PROMPT = "The quick brown fox jumps over the lazy dog, and then it runs into the deep green forest where the"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    print(f"load average before: {load_average()}; BLAS threads: {args.threads}")
    path = store.locate("smollm2-135m-instruct")
    start = time.perf_counter()
    model = llama.load_model(path)
    load = time.perf_counter() - start
    ids = list(bpe.encode(PROMPT, model.tokenizer).ids)[:20]  # 21 tokens: the first 20
    assert len(ids) == 20, len(ids)
    prefill, decode, lens = [], [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        out = llama.forward(model.weights, model.config, ids)
        llama.unembed(model.weights, model.config, out.hidden_states[-1, -1])
        prefill.append(time.perf_counter() - start)
        start = time.perf_counter()
        llama.logit_lens(model.weights, model.config, out.hidden_states[:, -1])
        lens.append(time.perf_counter() - start)
        for token in (11, 42, 260, 1116, 7042):
            start = time.perf_counter()
            step = llama.forward(model.weights, model.config, [token], out.cache)
            llama.unembed(model.weights, model.config, step.hidden_states[-1, -1])
            decode.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ms = lambda xs: f"{1000 * statistics.median(xs):.0f} ms (min {1000 * min(xs):.0f})"  # noqa: E731
    print(f"| load (parse, dequantize, tokenizer) | {load:.1f} s |")
    print(f"| prefill, 20 tokens, next-token logits | {ms(prefill)} |")
    print(f"| decode, 1 token after 20, with the cache | {ms(decode)} |")
    print(f"| logit lens, 31 states of the last token | {ms(lens)} |")
    print(f"| peak resident memory | {peak:.0f} MB |")
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
