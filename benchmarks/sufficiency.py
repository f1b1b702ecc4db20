"""Is Condition 1 (with 2 and 3) sufficient for the Theorem 5 constructor?  Build every accepted pair.

    python benchmarks/sufficiency.py [--formats F1,F2] [--seed S] [--all-branches] [activation ...]

For every built-in activation (or the ones named) and every format of at most 8 bits (or the ones
named), check_activation decides Conditions 1-3; where they hold, Theorem 5 is constructed on the
full d = 1 box of the format with random targets (``random:SEED``) and verified exactly (the
constructor verifies every network it returns).  One line per pair: the verdict, the network's depth
and the time, or the construction's error.  Formats outside both branches of the paper's theorems
(E < 4) are skipped unless --all-branches (there a construction is an attempt, not a claim).
A box that is not distinguishable (sigmoid and softplus on float8_e5m2: tiny inputs that no
first-layer neuron separates) is reported as such: that is a property of the domain, not of
(sigma, F).  Exit status 1 when some accepted pair with a distinguishable box fails to construct.
"""
from __future__ import annotations

import argparse
import sys
import time

SMALL_FORMATS = ["float8_e5m2", "float8_e4m3", "float8_e4m3fn", "float8_e3m4", "float8_e5m2fnuz",
                 "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn"]


def build_box(act: str, fmt: str, seed: int):
    """(outcome, detail): 'ok' with the network's size (condcheck.bench's full-box case), else
    'indistinguishable' or 'fails' with the constructor's error."""
    from condcheck.bench import construct_box
    from condcheck.theorem5 import ConstructionError

    try:
        return "ok", construct_box(act, fmt, seed)
    except ConstructionError as e:
        return ("indistinguishable" if str(e).startswith("distinguishability fails") else "fails"), str(e)


def main(argv=None) -> int:
    from condcheck.activations import list_activations
    from condcheck.check import check_activation, theorem_branch
    from condcheck.formats import get_format

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("activations", nargs="*")
    p.add_argument("--formats", default=",".join(SMALL_FORMATS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--all-branches", action="store_true", help="also formats with E < 4")
    a = p.parse_args(argv)
    acts = a.activations or [n for n in list_activations() if not n.startswith("test_")]
    failed = 0
    for fmt in a.formats.split(","):
        branch = theorem_branch(get_format(fmt))
        if branch.startswith("not covered") and not a.all_branches:
            print(f"{fmt:20s} skipped: {branch}")
            continue
        for act in acts:
            r = check_activation(act, fmt)
            if not r.holds:
                print(f"{fmt:20s} {act:10s} conditions {'fail' if r.holds is False else 'undecided'}")
                continue
            t = time.perf_counter()
            kind, detail = build_box(act, fmt, a.seed)
            dt = time.perf_counter() - t
            failed += kind == "fails" and not branch.startswith("not covered")
            print(f"{fmt:20s} {act:10s} {kind:17s} {detail[:400]} ({dt:.1f} s)", flush=True)
    print(f"{failed} accepted pair(s) with a distinguishable box failed to construct")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
