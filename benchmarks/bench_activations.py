"""Time the full sigma~ and sigma~' tables (exact, correctly rounded) for bfloat16 and float16.

    python benchmarks/bench_activations.py [activation ...]

Each table is computed from scratch (caches cleared) and timed; peak memory is measured with
tracemalloc (Python allocations, including numpy buffers) in a second, untimed run, and the process peak RSS is
printed at the end.
"""
from __future__ import annotations

import resource
import sys
import time
import tracemalloc

from condcheck import intervals, rounded_activation
from condcheck.activations import PAPER_ACTIVATIONS
from condcheck.formats import get_format


def main(names):
    get_format("bfloat16").values(), get_format("float16").values()      # enumerate formats once
    print(f"{'format':10s} {'activation':12s} {'seconds':>8s} {'peak MiB':>9s} {'fallbacks (value+deriv)':>24s}")
    for fmt in ("bfloat16", "float16"):
        for name in names:
            rounded_activation.clear_tables()
            intervals.compile_expression.cache_clear()
            t0 = time.perf_counter()
            t = rounded_activation.get_rounded(name, fmt).table()
            dt = time.perf_counter() - t0
            # memory in a second, untimed run (tracemalloc slows Python code down)
            rounded_activation.clear_tables()
            intervals.compile_expression.cache_clear()
            tracemalloc.start()
            rounded_activation.get_rounded(name, fmt).table()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"{fmt:10s} {name:12s} {dt:8.2f} {peak / 2**20:9.1f} "
                  f"{t.fallback_count:>10d} ({t.sigma_fallbacks}+{t.dsigma_fallbacks})", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS of the process: {rss / 1024:.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:] or list(PAPER_ACTIVATIONS))
