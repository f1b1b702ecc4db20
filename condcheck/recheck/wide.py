"""recheck of exhaustive verdicts beyond 16 bits (formats of 17 to 32 bits, enumerated in chunks by check).

Such a certificate states two kinds of facts.  **Existential** ones -- a witness's points and values, the
point z of Condition 1's failing clause (a), the pair for the clauses before a failing clause of
Condition 2, sigma~'(0) and 2^-M -- are re-derived point by point, as on any format.  **Universal** ones
speak of every value:

* Condition 1's dead tail: every value from -Omega to z_d is dead (sigma~ = L, sigma~' = 0).  Re-derived
  only when asked (``enumerate_wide``, ``condcheck recheck --enumerate``): recheck's own chunks of the
  tail (magnitudes generated here from (M, e_min), checked against the format's encoding at both ends of
  every chunk), sigma~ and sigma~' at every point by the shared evaluation of the implementation
  (:func:`condcheck.rounded_activation.evaluate_points`, as the checkers' chunks; for "exact" its float64
  enclosures carry the accuracy assumption the certificate's ``enumeration.sigma_source`` names), every
  point dead, and the chunks together exactly ``dead_count`` values -- on the Dask engine
  (:mod:`condcheck.distributed`) or in this process.
* Every "fails" other than Condition 1's clause (a) (no value, or no pair, satisfies the clause, and it
  is the first such clause), and the counts a counterexample reports over all values (smallest |sigma~|,
  largest |sigma~'|, the route (b) candidates, the distinct admissible sigma~ values).  recheck does not
  re-derive these beyond 16 bits: it names each one, and the certificate is not accepted.

recheck never accepts a statement it did not re-derive: a statement named here leaves the certificate
"not re-proved" (exit status 1), after every statement it could re-derive was checked.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .schema import EXHAUSTIVE_BITS

#: magnitudes per tail chunk, one sign (as many values as a check chunk's 2^20 magnitudes of both signs)
TAIL_CHUNK = 1 << 21
#: the widest format check enumerates in chunks
MAX_BITS = 32


@dataclass(frozen=True)
class TailJob:
    """One chunk of the dead tail: the values sign * v for the magnitudes v with index in [lo, hi)."""

    activation: object          # a registry name, or the Activation of a plug-in
    format: str
    implementation: str
    sign: int                   # -1 or +1
    lo: int
    hi: int
    L: float
    plugin: object = None       # a plug-in implementation travels as its object (condcheck.implementations)


def magnitude_values(fmt, lo: int, hi: int) -> np.ndarray:
    """The positive values (and zero, index 0) of an IEEE-like format with magnitude index in [lo, hi),
    ascending, as float64: index m is a subnormal m * 2^(e_min - M) below 2^M, else
    (2^M + m mod 2^M) * 2^(e_min + m div 2^M - 1 - M)."""
    m = np.arange(lo, hi, dtype=np.int64)
    top = m >> fmt.M
    frac = 1 << fmt.M
    significand = np.where(top == 0, m, frac + (m & (frac - 1))).astype(np.float64)
    return np.ldexp(significand, (np.maximum(top, 1) - 1 + fmt.e_min - fmt.M).astype(np.int64))


def tail_chunk(job: TailJob):
    """Worker task: (points, a value that is not dead or None) for one chunk of the tail."""
    from condcheck.activations import get_activation
    from condcheck.formats import get_format
    from condcheck.rounded_activation import evaluate_points
    fmt = get_format(job.format)
    v = magnitude_values(fmt, job.lo, job.hi)
    for m, x in ((job.lo, v[0]), (job.hi - 1, v[-1])):   # the encoding agrees at both ends
        if fmt.to_bits(Fraction(float(x))) != m:
            raise AssertionError(f"internal: magnitude {m} of {fmt.name} is not {float(x)!r}")
    x = job.sign * v + 0.0                                  # -0 is the value 0
    act = job.activation if not isinstance(job.activation, str) else get_activation(job.activation)
    if job.plugin is not None:                              # a plug-in implementation, carried by the job
        from condcheck.implementations import implementation_points
        s, so, d, do = implementation_points(job.plugin, act, fmt, x)
    else:
        s, so, d, do, _ = evaluate_points(act, fmt, job.implementation, x)
    bad = so | do | (s != job.L) | (d != 0)
    return int(x.size), (float(x[np.argmax(bad)]) if bad.any() else None)


class Wide:
    """The ``enum`` recheck's condition modules get for an exhaustive verdict beyond 16 bits: the universal
    statements are re-derived (the dead tail, when ``enumerate_wide``) or named as not re-derived."""

    wide = True

    def __init__(self, ctx, enumerate_wide: bool = False, runner=None):
        self.ctx, self.enumerate_wide, self.runner = ctx, enumerate_wide, runner

    def not_rederived(self, path: str, statement: str) -> None:
        self.ctx.pending.append((path, f"not re-derived: {statement} (a statement about every one of the "
                                       f"{self.ctx.fmt.count_finite():,} finite values of {self.ctx.fmt.name}; "
                                       f"recheck enumerates such statements up to {EXHAUSTIVE_BITS} bits)"))

    def dead_tail(self, path: str, zd: Fraction, L: Fraction, count: int) -> None:
        """Every value from -Omega to z_d is dead (``count`` values, already checked against the format)."""
        ctx = self.ctx
        fmt = ctx.fmt
        if not self.enumerate_wide:
            ctx.pending.append((path, f"not re-derived: every one of the {count:,} values of {fmt.name} from -Omega "
                                      f"to z_d is dead (run recheck with --enumerate to enumerate them)"))
            return
        jobs = self.tail_jobs(zd, L)
        from condcheck.distributed import SerialRunner
        runner = self.runner if self.runner is not None else SerialRunner()
        results = runner.map(tail_chunk, jobs, label="dead tail chunks")
        live = [x for _, x in results if x is not None]
        ctx.claim(not live, path, f"the value {live[0]!r} <= z_d is not dead (clause (a))" if live else "")
        total = sum(n for n, _ in results)
        ctx.claim(total == count, path, f"recheck's chunks of the tail hold {total:,} values, not {count:,}")
        ctx.proved += total - 1

    def tail_jobs(self, zd: Fraction, L: Fraction) -> list:
        ctx = self.ctx
        fmt, rounded = ctx.fmt, ctx.rounded
        act = rounded.activation
        from condcheck.activations import BUILTIN_ACTIVATIONS
        name = act.name if act.name in BUILTIN_ACTIVATIONS else act
        n = fmt.to_bits(ctx.omega) + 1                      # magnitudes 0 .. index of Omega
        parts = [(-1, fmt.to_bits(-zd), n)] if zd < 0 else [(-1, 1, n), (1, 0, fmt.to_bits(zd) + 1)]
        plugin = None
        from condcheck.implementations import BUILTIN_IMPLEMENTATIONS, get_implementation
        if rounded.implementation not in BUILTIN_IMPLEMENTATIONS:
            plugin = get_implementation(rounded.implementation)
        return [TailJob(name, fmt.name, rounded.implementation, sign, a, min(a + TAIL_CHUNK, hi), float(L), plugin)
                for sign, lo, hi in parts for a in range(lo, hi, TAIL_CHUNK)]
