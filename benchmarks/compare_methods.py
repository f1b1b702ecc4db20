"""Compare the exhaustive and the symbolic condition checkers on custom formats bM_E.

    python benchmarks/compare_methods.py [--E 2,3] [--max-bits 16] [--conditions 1,2,3] [activation ...]

For every built-in activation (or the ones named) and every custom format bM_E with the given exponent
widths and M + E + 1 <= max-bits, both checkers of each condition run; a line is printed for each
disagreement (verdict, or first failing clause when both say "fails") and a summary with the slowest
symbolic checks at the end.  Exit status 1 when some pair disagrees.  E <= 9 only: wider exponent
ranges do not fit float64 and the exhaustive checkers refuse them.
"""
from __future__ import annotations

import argparse
import sys
import time

from condcheck.activations import list_activations
from condcheck.formats import get_format
from condcheck.rounded_activation import get_rounded
from conditions import condition1, condition2, condition3

MODULES = {"1": condition1, "2": condition2, "3": condition3}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("activations", nargs="*")
    p.add_argument("--E", default="2", help="exponent widths, comma separated (2..9)")
    p.add_argument("--max-bits", type=int, default=16)
    p.add_argument("--conditions", default="1,2,3")
    a = p.parse_args(argv)
    acts = a.activations or [n for n in list_activations() if not n.startswith("test_")]
    conds = a.conditions.split(",")
    n = bad = 0
    times = []
    for E in (int(e) for e in a.E.split(",")):
        for M in range(1, a.max_bits - E):
            fmt = get_format(f"b{M}_{E}")
            for act in acts:
                r = get_rounded(act, fmt)
                for c in conds:
                    mod = MODULES[c]
                    ex = mod.check_exhaustive(r)
                    t0 = time.perf_counter()
                    sy = mod.check_symbolic(r)
                    times.append((time.perf_counter() - t0, f"C{c} {act} {fmt.name}"))
                    n += 1
                    same = sy.holds is ex.holds and (ex.holds or sy.failing_clause == ex.failing_clause)
                    if not same:
                        bad += 1
                        print(f"DISAGREE C{c} {act} {fmt.name}: exhaustive {ex.verdict_text} "
                              f"({ex.failing_clause}); symbolic {sy.verdict_text} "
                              f"({sy.failing_clause or sy.reason})", flush=True)
    times.sort(reverse=True)
    print(f"{n} comparisons, {bad} disagreements; slowest symbolic checks: "
          + ", ".join(f"{name} {t:.2f} s" for t, name in times[:5]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
