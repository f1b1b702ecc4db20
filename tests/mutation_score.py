"""The mutation score of ``condcheck recheck``: ``python3 -m tests.mutation_score [--slow]``.

Runs the mutation suite of tests/test_certificate_mutations.py (the default certificates, with
``--slow`` the whole matrix) and prints, per certificate and in all, how many false mutants recheck
rejected and how many true mutants it accepted.  Exit status 1 when a false mutant was accepted.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_certificate_mutations import DEFAULT, SLOW, run, score_text  # noqa: E402


def main(argv) -> int:
    cases = DEFAULT + (SLOW if "--slow" in argv else [])
    results, t0 = [], time.perf_counter()
    for case in cases:
        r = run(case)
        results.append(r)
        print(f"{'-'.join(case):40s} {score_text([r])}", flush=True)
        for e in r["escapes"]:
            print(f"  ACCEPTED A FALSE MUTANT: {e}")
    print(f"{score_text(results)} ({time.perf_counter() - t0:.0f} s)")
    return 1 if any(r["escapes"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
