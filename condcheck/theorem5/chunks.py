"""Chunks of a construction: the per-point searches split into a fixed number of chunks of the domain
(parts of its points, or for sliced gating one coordinate each), run side by side in forked worker
processes where the machine has the cores.

Why the network does not depend on the workers: the chunks are a function of the domain and the format
only (``point_chunks``), and each chunk's searches are a function of its points, the values that the
chunks agree on between rounds (``run_rounds``: the deepest branch, each point's number of gradient
gates) and the construction's caches, which hold pure functions of their keys.  Run in one process, the
chunks take their rounds one after the other (chunk 1's round, chunk 2's round, then the next round);
run in workers, each chunk starts from the state the construction had before the rounds (fork: the
same memory, copied on write) and only its own caches fill.  Either way every chunk sees the same
numbers, so the network is the same (tests/test_theorem5_chunks.py builds both ways and compares every
layer).
"""
from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import time
import traceback
from dataclasses import dataclass

from ..errors import CondcheckError
from . import tuning
from .errors import ConstructionError


@dataclass(frozen=True)
class Chunk:
    """A chunk of a construction: the (point, coordinate) pairs whose gradient branches it searches
    (``grad_points`` x ``coords``, point by point) and the points whose value branches it builds."""
    grad_points: range
    coords: tuple
    points: range

    def pairs(self):
        return ((zi, j) for zi in self.grad_points for j in self.coords)

    def __len__(self):
        return len(self.grad_points) * len(self.coords)


def point_chunks(n_points: int, d: int, small_format: bool, by_coordinate: bool = False) -> list:
    """The chunks of a domain of n_points points in d coordinates, in the order one process takes them.

    On the small formats (at most 4,096 values) with at least CHUNK_MIN_POINTS points:

    - by_coordinate (sliced gating, d >= 2): chunk j searches the gradient branches of coordinate j at
      every point, and builds the value branches of the j-th of d even parts of the points.  A branch of
      coordinate j reads the slices x_j = v (its source, passes and slice gate, which the points of a
      slice share), so each chunk fills only its own coordinate's slice caches (sigmoid on the
      float8_e4m3 d = 2 box split by points instead: each half searched every slice of the other
      coordinate again, 29 s a half cold against 15 s after the other half);
    - else POINT_CHUNKS contiguous parts of the points, each with its points' gradient and value
      branches.

    Elsewhere one chunk.  Larger formats stay one chunk up to ``tuning.SPREAD_FROM`` points: their searches
    spend a transfer budget (``tuning.TRANSFER_BUDGET``) that a cached search does not use, so there a
    search's outcome depends on what the caches hold.  Beyond (per-point gating, not by_coordinate), parts
    of ``tuning.SPREAD_CHUNK_POINTS`` points, each searched from a fresh context (``spread``), so that its
    outcome depends on its points only."""
    every = tuple(range(d))
    if not small_format and not by_coordinate and n_points > tuning.SPREAD_FROM:
        k = -(-n_points // tuning.SPREAD_CHUNK_POINTS)
        parts = [range(n_points * i // k, n_points * (i + 1) // k) for i in range(k)]
        return [Chunk(p, every, p) for p in parts]
    if not small_format or n_points < tuning.CHUNK_MIN_POINTS or tuning.POINT_CHUNKS < 2:
        return [Chunk(range(n_points), every, range(n_points))]
    k = d if by_coordinate and d >= 2 else tuning.POINT_CHUNKS
    parts = [range(n_points * i // k, n_points * (i + 1) // k) for i in range(k)]
    if by_coordinate and d >= 2:
        return [Chunk(range(n_points), (j,), parts[j]) for j in range(d)]
    return [Chunk(p, every, p) for p in parts]


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:         # pragma: no cover  (not Linux)
        return os.cpu_count() or 1


def resolve_jobs(jobs) -> int:
    """The worker processes to use: jobs if given, else tuning.JOBS, else the environment variable
    CONDCHECK_JOBS, else the usable CPUs; a positive integer in every case."""
    what = "jobs"
    if jobs is None:
        jobs = tuning.JOBS
    if jobs is None and os.environ.get("CONDCHECK_JOBS"):
        what, text = "the environment variable CONDCHECK_JOBS", os.environ["CONDCHECK_JOBS"]
        jobs = int(text) if text.strip().isdigit() else text
    if jobs is None:
        jobs = usable_cpus()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CondcheckError(f"{what} must be a positive integer (the worker processes), not {jobs!r}")
    return jobs


def run_rounds(chunks, rounds, combine, jobs: int = 1, progress=None):
    """Run ``rounds(chunk, report)`` for every chunk and return their results, in chunk order.

    ``rounds`` is a generator function: each ``yield v`` ends a round, and the generator resumes with
    ``combine([v of every chunk])``; its return value is the chunk's result.  Every chunk must take the
    same number of rounds.  ``report(k)`` adds k to the points done, passed on as ``progress(done)``.

    With jobs > 1 and more than one chunk (where fork is available): every chunk but the first in a
    forked worker process, the first here beside them; an error is raised here, the first chunk's
    first (as one process would)."""
    done = [0]

    def report(k=1):
        done[0] += k
        if progress:
            progress(done[0])
    forkable = "fork" in multiprocessing.get_all_start_methods()
    if jobs <= 1 or len(chunks) <= 1 or not forkable:
        return _run_here(chunks, rounds, combine, report)
    return _run_forked(chunks, rounds, combine, report)


def _run_here(chunks, rounds, combine, report):
    gens = [rounds(c, report) for c in chunks]
    vals = [next(g) for g in gens]
    while True:
        combined = combine(vals)
        vals, results = [], []
        for g in gens:
            try:
                vals.append(g.send(combined))
            except StopIteration as stop:
                results.append(stop.value)
        if results:
            if vals:
                raise ConstructionError("internal: the chunks took different numbers of rounds")  # pragma: no cover
            return results


def _worker(rounds, chunk, conn):
    """A worker's chunk: sends ("value", v) at the end of each round and waits for the combined value,
    ("progress", k) now and then, and last ("result", r) or ("error", exception)."""
    pending, last = [0], [time.monotonic()]

    def report(k=1):
        pending[0] += k
        now = time.monotonic()
        if now - last[0] >= 0.2:
            conn.send(("progress", pending[0]))
            pending[0], last[0] = 0, now

    def flush():
        if pending[0]:
            conn.send(("progress", pending[0]))
            pending[0] = 0
    try:
        g = rounds(chunk, report)
        v = next(g)
        while True:
            flush()
            conn.send(("value", v))
            try:
                v = g.send(conn.recv())
            except StopIteration as stop:
                flush()
                conn.send(("result", stop.value))
                return
    except BaseException as e:        # noqa: BLE001  (every failure reaches the parent)
        if not isinstance(e, ConstructionError):
            try:
                e.add_note("in a construction worker:\n" + traceback.format_exc())
            except AttributeError:      # pragma: no cover  (Python < 3.11)
                pass
        try:
            pickle.loads(pickle.dumps(e))   # (an exception whose class takes other arguments does not load)
        except Exception:               # noqa: BLE001
            e = ConstructionError(f"{type(e).__name__} in a construction worker: {e}")
        conn.send(("error", e))
    finally:
        conn.close()


def _run_forked(chunks, rounds, combine, report):
    from multiprocessing.connection import wait

    mp = multiprocessing.get_context("fork")
    local = rounds(chunks[0], report)
    rest = chunks[1:]
    conns, procs = [], []
    try:
        for c in rest:
            parent_end, child_end = mp.Pipe()
            p = mp.Process(target=_worker, args=(rounds, c, child_end), daemon=True)
            p.start()
            child_end.close()
            conns.append(parent_end)
            procs.append(p)
        here = ("value", next(local))       # the first chunk's first round, beside the workers
        while True:
            # one round: a value, a result or an error from every worker (progress in between)
            got = [None] * len(rest)
            while any(m is None for m in got):
                for conn in wait([conns[i] for i in range(len(rest)) if got[i] is None]):
                    i = conns.index(conn)
                    got[i] = _receive(conn, rest[i], procs[i], report)
            msgs = [here] + got
            for kind, payload in msgs:
                if kind == "error":
                    raise payload
            if all(kind == "result" for kind, _ in msgs):
                return [payload for _, payload in msgs]
            if any(kind == "result" for kind, _ in msgs):
                raise ConstructionError("internal: the chunks took different numbers of rounds")  # pragma: no cover
            combined = combine([payload for _, payload in msgs])
            for conn in conns:
                conn.send(combined)
            try:                        # the first chunk's next round, beside the workers'
                here = ("value", local.send(combined))
            except StopIteration as stop:
                here = ("result", stop.value)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
        for conn in conns:
            conn.close()


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector off inside the block (as it was after): for the steps that make many
    small objects that form no cycles (unpickling a chunk's branches, assembling the layers), where
    collections would walk the whole heap again and again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def gc_frozen():
    """Every object alive at the start moved out of the collector's reach inside the block (``gc.freeze``;
    back after, unless the caller had frozen some already).  A construction starts with a large heap (the
    imports: sympy, mpmath, numpy) that no collection of its own objects needs to walk, yet each full
    collection during it walked the whole heap: relu on the float8_e5m2 box, 0.06-0.11 s per full
    collection, two in the parent and one in each worker (forked workers inherit the frozen heap)."""
    frozen = gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    try:
        yield
    finally:
        if frozen:
            gc.unfreeze()


def _receive(conn, chunk, proc, report):
    """The worker's next ("value" | "result" | "error", payload), or None after a progress message.

    Unpickled with the garbage collector off: a chunk's branches are many small objects, and collections
    triggered while they arrive walk the whole heap of this process (sigmoid on a 64 x 64 float8_e4m3
    grid: 0.42 s against 0.10 s for a chunk's 6,000 branches)."""
    try:
        with gc_paused():
            kind, payload = conn.recv()
    except EOFError:
        proc.join(5)                    # (its exit code once it is reaped)
        kind, payload = "error", ConstructionError(
            f"a construction worker ({_describe(chunk)}) ended without a result (exit code {proc.exitcode})")
    if kind == "progress":
        report(payload)
        return None
    return kind, payload


def _describe(chunk) -> str:
    """A chunk in an error message: its points (a range) or its points and coordinates (a Chunk)."""
    if isinstance(chunk, Chunk):
        coords = ", ".join(str(j + 1) for j in chunk.coords)
        return f"points {chunk.grad_points.start + 1}-{chunk.grad_points.stop}, coordinates {coords}"
    return f"points {chunk.start + 1}-{chunk.stop}"
