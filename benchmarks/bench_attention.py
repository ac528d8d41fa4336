"""Time our NumPy scaled dot-product attention against PyTorch's, single-threaded.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_attention.py [--quick]

Why the ``env -u``: some machines pin OpenBLAS to an older kernel (OPENBLAS_CORETYPE) or
cache size (OPENBLAS_L2_SIZE), which slows NumPy; unset them for this command only.
Thread counts are pinned to 1 below, before NumPy is imported, because OpenBLAS reads
them when it loads; threadpoolctl (optional) confirms it and names the BLAS kernel.

Inputs: 12 heads, d_k = d_v = 64, n = 128, 512, 2048 tokens, float32, standard normal.
Times are medians over several samples (each sample averages enough calls to last
~50 ms). Peak memory is measured with tracemalloc in a separate, untimed call: NumPy
reports its array buffers to tracemalloc, PyTorch's allocator does not, so only ours
is shown. Accuracy is the max abs difference of a float32 output from a float64
reference computed directly from the same (float32) inputs.

Prints a Markdown table that can be pasted into benchmarks/README.md.
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"  # must happen before numpy (and torch) are imported

import argparse  # noqa: E402
import contextlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from generator.models.core import scaled_dot_product_attention  # noqa: E402

try:
    import threadpoolctl
except ImportError:  # optional: only used to confirm threads and name the BLAS kernel
    threadpoolctl = None

try:
    import torch
except ImportError:  # optional: without it, only our own figures are printed
    torch = None

HEADS = 12
D_HEAD = 64
SIZES = (128, 512, 2048)
QUICK_SIZES = (128, 512)
MIB = 2**20


def make_inputs(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v of shape [HEADS, n, D_HEAD], float32."""
    return tuple(rng.standard_normal((HEADS, n, D_HEAD), dtype=np.float32) for _ in range(3))


def reference_float64(q, k, v):  # [h, n, d] x3 -> [h, n, d] float64
    """Plain float64 attention, written out independently of generator.models.core."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v


def calls_per_sample(fn, target_seconds: float = 0.05) -> int:
    """How many calls make one timing sample last about ``target_seconds`` (after a warm-up)."""
    fn()
    start = time.perf_counter()
    fn()
    return max(1, round(target_seconds / (time.perf_counter() - start)))


def sample(fn, calls: int) -> float:
    """Mean seconds per call over ``calls`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def median_times(fns: dict, repeats: int) -> dict[str, float]:
    """Median seconds per call for each function; samples interleave so all share the noise."""
    calls = {name: calls_per_sample(fn) for name, fn in fns.items()}
    samples = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            samples[name].append(sample(fn, calls[name]))
    return {name: statistics.median(times) for name, times in samples.items()}


def peak_traced_bytes(fn) -> int:
    """Peak bytes allocated (as seen by tracemalloc) during one call, beyond what existed before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        baseline, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return peak - baseline


def describe_environment() -> list[str]:
    lines = [f"- Python {sys.version.split()[0]}, NumPy {np.__version__}"]
    if threadpoolctl is None:
        lines.append("- BLAS: unknown (pip install threadpoolctl to see the kernel and threads)")
    else:
        for pool in sorted(threadpoolctl.threadpool_info(), key=lambda pool: pool["user_api"]):
            name = " ".join(str(pool[key]) for key in ("internal_api", "version") if pool.get(key))
            kernel = f", kernel {pool['architecture']}" if pool.get("architecture") else ""
            lines.append(f"- {pool['user_api']}: {name}{kernel}, {pool['num_threads']} thread(s) ({pool['filepath']})")
    if torch is None:
        lines.append("- PyTorch: not installed, no comparison")
    else:
        lines.append(
            f"- PyTorch {torch.__version__}, {torch.get_num_threads()} thread(s), "
            f"CPU capability {torch.backends.cpu.get_cpu_capability()}"
        )
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if variable in os.environ:
            lines.append(f"- WARNING: {variable}={os.environ[variable]} is set; numbers are slower than they need be")
    return lines


def run(sizes: tuple[int, ...], repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        q, k, v = make_inputs(n, rng)
        fns = {"ours": lambda: scaled_dot_product_attention(q, k, v)}
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            fns["torch"] = lambda: sdpa(tq, tk, tv)
        with torch.inference_mode() if torch is not None else contextlib.nullcontext():
            row = {"n": n, **median_times(fns, repeats)}
            reference = reference_float64(q, k, v)
            row["ours_error"] = float(np.max(np.abs(scaled_dot_product_attention(q, k, v)[0] - reference)))
            if torch is not None:
                row["torch_error"] = float(np.max(np.abs(fns["torch"]().numpy() - reference)))
        del reference
        row["ours_peak"] = peak_traced_bytes(fns["ours"])
        row["weights_bytes"] = HEADS * n * n * np.dtype(np.float32).itemsize
        rows.append(row)
    return rows


def growth(rows: list[dict], index: int, key: str) -> str:
    """time(n) / time(n/4) when the previous row is a quarter the size, else a dash."""
    if index == 0 or key not in rows[index] or rows[index]["n"] != 4 * rows[index - 1]["n"]:
        return "—"
    return f"{rows[index][key] / rows[index - 1][key]:.1f}×"


def markdown_table(rows: list[dict]) -> list[str]:
    has_torch = "torch" in rows[0]
    header = ["n", "ours (ms)"]
    if has_torch:
        header += ["torch (ms)", "ours / torch"]
    header += ["ours n/4→n", *(["torch n/4→n"] if has_torch else [])]
    header += ["ours peak (MiB, tracemalloc)", "weights array (MiB)", "ours f32 vs f64 max abs"]
    if has_torch:
        header += ["torch f32 vs f64 max abs"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, row in enumerate(rows):
        cells = [str(row["n"]), f"{row['ours'] * 1e3:.2f}"]
        if has_torch:
            cells += [f"{row['torch'] * 1e3:.2f}", f"{row['ours'] / row['torch']:.2f}"]
        cells += [growth(rows, index, "ours"), *([growth(rows, index, "torch")] if has_torch else [])]
        cells += [f"{row['ours_peak'] / MIB:.1f}", f"{row['weights_bytes'] / MIB:.1f}", f"{row['ours_error']:.1e}"]
        if has_torch:
            cells += [f"{row['torch_error']:.1e}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 128, 512 only, 3 samples each")
    parser.add_argument("--repeats", type=int, help="timing samples per size (default 7, --quick 3)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    repeats = args.repeats or (3 if args.quick else 7)
    if torch is not None:
        torch.set_num_threads(1)
    limits = threadpoolctl.threadpool_limits(1) if threadpoolctl is not None else contextlib.nullcontext()
    with limits:
        rows = run(sizes, repeats)
        environment = describe_environment()
    print(f"Scaled dot-product attention, {HEADS} heads, d={D_HEAD}, float32, single-threaded, "
          f"median of {repeats} samples\n")
    print("\n".join(environment + [""] + markdown_table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
