"""Exhaustive checks of Conditions 1-3 for formats beyond 16 bits (float32): every value, in chunks.

The format's 2^32 patterns are cut into chunks of magnitudes (:mod:`conditions.chunks`: a chunk holds
-v and v).  Each chunk is evaluated once, as the chosen implementation computes sigma~ and sigma~', and
reduced to one summary per condition (:mod:`conditions.condition1_chunks`, ``condition2_chunks``,
``condition3_chunks``: why each summary is exact is in its module docstring).  The summaries merge
associatively and commutatively into the verdict, witness and counterexample of the whole-table
checkers of conditions/condition1-3.py; the few points a witness needs are found by evaluating one or
a few chunks again (their digest must match the first evaluation), and every witness clause is
re-checked with exact rationals on the values the enumeration saw (:class:`conditions.chunks.RecordedRounded`).
For the "exact" implementation every witness value is also re-derived by the certain path (Arb,
mpmath), which does not rest on the numpy enclosures' accuracy assumption.

The chunks run on :mod:`condcheck.distributed` (Dask) by default; ``runner=SerialRunner()`` runs them
in this process (tests).  Before any verdict the chunk results must tile all magnitudes exactly, each
with its full count of points, together every finite value of the format once (-0 is the value 0: the
pattern of -0 is not evaluated apart from +0, as everywhere in condcheck, docs/semantics.md).
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from condcheck.errors import CondcheckError
from condcheck.formats import Format

from . import condition1_chunks, condition2_chunks, condition3_chunks
from ._search import verdict_names
from .chunks import (ChunkJob, Magnitudes, RecordedRounded, check_cover, evaluate, expected_points,
                     plan_chunks)

#: magnitudes per chunk for float32 (2^20: 2,097,152 points, 2,040 chunks).  A chunk's float64 arrays are
#: then 16 MiB, under glibc's largest mmap threshold (32 MiB): at 2^21 every such array was mapped and
#: unmapped anew, and a chunk spent nearly half its CPU in page faults (exact GELU: 5.7 CPU s and 715 MiB
#: per 2^21 magnitudes, 4.3 s and 433 MiB as two chunks of 2^20; docs/scale.md)
CHUNK_MAGNITUDES = 1 << 20
#: formats beyond this many bits are not enumerated (2^33 patterns and more)
MAX_BITS = 32


@dataclass
class ChunkSummary:
    lo: int
    hi: int
    points: int
    digest: str
    seconds: float
    fallbacks: int
    cpu_seconds: float
    c1: object
    c2: object
    c3: object


def summarize(job: ChunkJob) -> ChunkSummary:
    """Worker task: evaluate a chunk and reduce it to its three summaries."""
    t0, c0 = time.perf_counter(), time.process_time()
    c = evaluate(job)
    if c.size != expected_points(job.lo, job.hi):
        raise AssertionError(f"internal: chunk [{job.lo}, {job.hi}) has {c.size} points, not "
                             f"{expected_points(job.lo, job.hi)}")
    c1 = condition1_chunks.Summary1.of_chunk(c)
    c2 = condition2_chunks.Summary2.of_chunk(c)
    c3 = condition3_chunks.Summary3.of_chunk(c)
    return ChunkSummary(job.lo, job.hi, c.size, c.digest, time.perf_counter() - t0, c.fallbacks,
                        time.process_time() - c0, c1, c2, c3)


def query(item):
    """Worker task: evaluate a chunk again (its digest must match) and answer ``fn(chunk, *args)``."""
    job, digest, fn, args = item
    c = evaluate(job)
    if c.digest != digest:
        raise CondcheckError(f"chunk [{job.lo}, {job.hi}) gave different sigma~ or sigma~' values when evaluated "
                             f"again: the {job.implementation} implementation is not deterministic here")
    return fn(c, *args)


def values_at(c, xs):
    """{x: (sigma~, sigma~')} at points of the chunk."""
    i = np.searchsorted(c.P, np.asarray(xs, dtype=np.float64))
    if not np.array_equal(c.P[np.minimum(i, c.P.size - 1)], np.asarray(xs, dtype=np.float64)):
        raise AssertionError("internal: a point is not in its chunk")
    return {float(x): (float(c.S[j]), float(c.D[j])) for x, j in zip(xs, i)}


def merge_all(summaries, key: str):
    return functools.reduce(lambda a, b: a.merge(b), (getattr(s, key) for s in summaries))


class Context:
    """What the condition modules' ``decide`` functions use: the format, the per-chunk summaries, and
    chunk queries (each evaluates one chunk again on the runner)."""

    def __init__(self, rounded, job: ChunkJob, runner, summaries, head: str, t0: float):
        self.rounded, self.fmt, self.job, self.runner = rounded, rounded.format, job, runner
        self.mags = Magnitudes(self.fmt)
        self.summaries = sorted(summaries, key=lambda s: s.lo)
        self.head, self.t0 = head, t0
        self.values = {}
        self.recorded = RecordedRounded(rounded, self.values)
        self.requeried = 0
        self._distinct = None

    def names(self, condition: int) -> dict:
        return verdict_names(condition, self.rounded)

    def seconds(self) -> float:
        return time.perf_counter() - self.t0

    def chunk_summaries(self, key: str):
        return [((s.lo, s.hi), getattr(s, key)) for s in self.summaries]

    def _summary(self, rng):
        return next(s for s in self.summaries if (s.lo, s.hi) == tuple(rng))

    def query(self, rng, fn, *args):
        s = self._summary(rng)
        self.requeried += 1
        return self.runner.map(query, [(self.job.with_range(s.lo, s.hi), s.digest, fn, args)],
                               label="witness chunk")[0]

    def record(self, points):
        for p in points:
            self.values[float(p[0])] = (float(p[1]), float(p[2]))

    def fetch(self, xs):
        """Make sure sigma~ and sigma~' at the points xs are recorded (evaluating their chunks again)."""
        need = sorted({float(x) for x in xs if float(x) not in self.values})
        if not need:
            return
        m = self.mags.index(np.array(need))
        by_chunk = {}
        for x, mi in zip(need, m.tolist()):
            s = next(s for s in self.summaries if s.lo <= mi < s.hi)
            by_chunk.setdefault((s.lo, s.hi), []).append(x)
        for rng, pts in by_chunk.items():
            self.values.update(self.query(rng, values_at, pts))

    def distinct_abs_derivatives(self):
        """Sorted distinct |sigma~'| over all admissible points (one more pass over every chunk)."""
        if self._distinct is None:
            items = [(self.job.with_range(s.lo, s.hi), s.digest, condition2_chunks.distinct_abs_derivatives, ())
                     for s in self.summaries]
            parts = self.runner.map(query, items, label="distinct sigma~'")
            self._distinct = functools.reduce(condition2_chunks.merge_distinct, parts)
        return self._distinct


def sigma_source(rounded) -> str:
    """How sigma~ and sigma~' were obtained, for the certificate."""
    act, fmt, impl = rounded.activation, rounded.format, rounded.implementation
    if impl == "torch":
        from condcheck.torch_impl import evidence_note
        return evidence_note(act, fmt)
    if impl not in ("exact", "float32-upcast"):          # a plug-in implementation
        return rounded.source_note
    if act.is_callable:
        how = "RN_F" if impl == "exact" else "RN_F(RN_float32(.))"
        return (f"callable, trusted: {how} of the user's mpmath callables, accepted when two precisions agree away "
                f"from rounding boundaries (not certified like a sympy expression)")
    if impl == "exact":
        return ("correctly rounded: float64 interval enclosures of the sympy expression (condcheck.intervals, "
                "NumpyBackend) rounded at both ends, and the certain path (Arb balls, then mpmath) wherever the two "
                "ends round differently; runs of consecutive values on which sigma~ or sigma~' is constant were "
                "filled from one interval enclosure over the run (mpmath, as the symbolic range check). "
                "ASSUMPTIONS (not proved): numpy's and scipy's float64 functions are accurate within the "
                "NumpyBackend's margins (1 ulp after +, -, *, /, sqrt; 4 ulps after every libm/scipy function; "
                "8 + 4 t^2 after erfc(t)), and mpmath's within 2^-(prec-8) relative")
    return (f"float32-upcast: the expression evaluated by numpy/scipy in float32 arithmetic, one contiguous array per "
            f"chunk, rounded once to {fmt.name}")


def check_chunked(rounded, *, chunk_magnitudes: int | None = None, splits=None, source: str = "direct",
                  runner=None, scheduler=None, workers=None, progress=None):
    """Conditions 1-3 over every value of the format, chunk by chunk: ({"1": Verdict, ...}, info).

    ``chunk_magnitudes`` (default :data:`CHUNK_MAGNITUDES`, or the format's size / 16 for small formats)
    or ``splits`` (explicit split points, magnitude indices) cut the format; ``source`` "direct" evaluates
    the implementation chunk by chunk, "table" reads the format's table (at most 24 bits: tests);
    ``runner`` (default: a :class:`condcheck.distributed.Engine` with ``scheduler``, ``workers`` and
    ``progress``) runs the chunks.  ``info`` says how: chunks, points, workers, worker peak memory,
    chunks evaluated again, and how sigma~ was obtained."""
    t0 = time.perf_counter()
    fmt: Format = rounded.format
    if fmt.bits > MAX_BITS:
        raise CondcheckError(f"the exhaustive check enumerates formats of at most {MAX_BITS} bits; {fmt.name} has "
                             f"{fmt.bits} (use method='symbolic')")
    if not fmt.fits_float64:
        raise CondcheckError(f"the exhaustive check needs a format whose values and sums of two values round "
                             f"correctly through float64; {fmt.name} is not one (use method='symbolic')")
    mags = Magnitudes(fmt)
    if splits is None:
        size = chunk_magnitudes or (CHUNK_MAGNITUDES if mags.n > (1 << 24) else max(1, mags.n // 16))
        ranges = plan_chunks(mags.n, size)
    else:
        ranges = plan_chunks(mags.n, splits=splits)
    act = rounded.activation
    from condcheck.activations import BUILTIN_ACTIVATIONS
    impl = rounded.implementation
    from condcheck.rounded_activation import IMPLEMENTATIONS
    plugin = None
    if impl not in IMPLEMENTATIONS:                    # workers may not have it registered: it travels along
        from condcheck.implementations import get_implementation
        plugin = get_implementation(impl)
    job = ChunkJob(act.name if act.name in BUILTIN_ACTIVATIONS else act, fmt.name, impl, 0, 1, source, plugin)
    jobs = [job.with_range(lo, hi) for lo, hi in ranges]
    if runner is None:
        from condcheck.distributed import Engine
        with Engine(scheduler, workers, progress=progress) as eng:
            return _run(rounded, job, jobs, eng, t0)
    return _run(rounded, job, jobs, runner, t0)


def _run(rounded, job, jobs, runner, t0):
    fmt = rounded.format
    mags = Magnitudes(fmt)
    summaries = runner.map(summarize, jobs, label=f"{rounded.activation.name} {fmt.name} chunks")
    check_cover([(s.lo, s.hi) for s in summaries], mags.n)
    for s in summaries:
        if s.points != expected_points(s.lo, s.hi):
            raise CondcheckError(f"chunk [{s.lo}, {s.hi}) reported {s.points} points, not {expected_points(s.lo, s.hi)}")
    total = sum(s.points for s in summaries)
    if total != fmt.count_finite():
        raise CondcheckError(f"the chunks hold {total} values, not the {fmt.count_finite()} finite values of {fmt.name}; "
                             f"no verdict is given")
    head = f"{total} finite values of {fmt.name} enumerated in {len(summaries)} chunks"
    ctx = Context(rounded, job, runner, summaries, head, t0)
    verdicts = {"1": condition1_chunks.decide(merge_all(summaries, "c1"), ctx),
                "2": condition2_chunks.decide(merge_all(summaries, "c2"), ctx),
                "3": condition3_chunks.decide(merge_all(summaries, "c3"), ctx)}
    checked = _cross_check(rounded, ctx.values)
    info = {"chunks": len(summaries), "points": total, "magnitudes_per_chunk": max(s.hi - s.lo for s in summaries),
            "engine": runner.kind, "workers": runner.workers, "chunks_evaluated_again": ctx.requeried,
            "chunk_seconds": round(sum(s.seconds for s in summaries), 3),
            "chunk_cpu_seconds": round(sum(s.cpu_seconds for s in summaries), 3),
            "certain_path_evaluations": sum(s.fallbacks for s in summaries),
            "sigma_source": sigma_source(rounded), "witness_values_rederived": checked,
            "worker_peak_mib": runner.worker_peaks()}
    return verdicts, info


def _cross_check(rounded, values) -> str:
    """For "exact" on a sympy expression: re-derive every recorded value by the certain path."""
    act = rounded.activation
    if rounded.implementation != "exact" or act.is_callable or rounded.format.bits <= 16:
        return "not applicable (only the exact implementation of a sympy expression has an independent certain path)"
    from fractions import Fraction

    from condcheck.rounded_activation import exact_point
    bad = []
    for x, (s, d) in sorted(values.items()):
        for deriv, v in ((False, s), (True, d)):
            r = exact_point(act, deriv, Fraction(x), rounded.format)
            got = np.nan if isinstance(r, float) else float(r)
            if not (got == v or (np.isnan(got) and np.isnan(v))):
                bad.append(f"{act.name}{chr(39) if deriv else ''}({x!r}) = {v!r} by the enclosures, {got!r} certain")
    if bad:
        raise CondcheckError("the numpy enclosures disagree with the certain path at a witness point, so their "
                             "accuracy assumption fails there: " + "; ".join(bad[:3]))
    return f"all {2 * len(values)} values at {len(values)} witness points equal the certain path's"
