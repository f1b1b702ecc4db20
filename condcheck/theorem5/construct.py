"""``construct_theorem5``: the whole construction, layer by layer, then exact verification.
"""
from __future__ import annotations

from ..errors import CondcheckError
from ..formats import get_format
from .build import Build, verify_points
from .chunks import gc_frozen, point_chunks, resolve_jobs, run_rounds
from .errors import ConditionFailure, ConstructionError, ValueGainOverflow


def construct_theorem5(activation, fmt, points, values, upstream, gradients, implementation="exact",
                       verify_result=True, max_post=None, progress=None, gating="auto", jobs=None, scheduler=None,
                       stats=None, checkpoint=None):
    """Build a network f with f(x) = values and D_(f,x)(upstream) = gradients on every point.

    ``progress(done, total)`` is called once per point and coordinate for the gradient branches, then once
    per point for the values (total N d + N; with worker processes, in steps every 0.2 s).
    ``gating``: "points" (each point's gates read the gating steps), "slices" (d >= 2: AND gates of
    slice neurons, ``SlicedContext``) or "auto" (slices for d >= 2 beyond EXACT_GATE_POINTS points, where
    per-point gates would cost N x N rounded sums to build and to verify).

    On formats outside both branches of the paper's theorems (E < 4) the construction is an attempt:
    its errors say so.

    ``jobs``: the worker processes for the per-point searches (default ``tuning.JOBS``, else the
    environment variable CONDCHECK_JOBS, else the usable CPUs; 1 runs everything in this process).  The
    network does not depend on it (``chunks``).  Formats with more than 4,096 values on domains of more
    than ``tuning.SPREAD_FROM`` points (d = 1: the 16-bit boxes) run their chunks on Dask workers
    (``spread``): a LocalCluster of ``jobs`` worker processes (jobs = 1: all in this process), or the
    cluster at ``scheduler`` (an address such as tcp://HOST:PORT); the network depends on neither.
    ``stats`` (a dict): filled there with the chunks, the chunk runs (runs again included), the workers
    and their peak memory (``spread.run_spread``).  ``checkpoint`` (a directory, spread constructions
    only): every chunk's result is kept there as it arrives, and a run again with the same directory
    reads the chunks done instead of running them (``checkpoint``).

    >>> import numpy as np
    >>> from condcheck import construct_theorem5
    >>> net, claim = construct_theorem5("relu", "float8_e4m3", [[-1.0], [0.5]], [0.25, 2.0], [1.0, 0.5],
    ...                                 [[3.0], [-0.5]])
    >>> values, gradients = net.evaluate(np.array([[-1.0], [0.5]]), np.array([[1.0], [0.5]]))
    >>> values.tolist(), gradients.ravel().tolist()
    ([0.25, 2.0], [3.0, -0.5])
    """
    from ..paper import theorem_branch

    args = (activation, fmt, points, values, upstream, gradients, implementation, verify_result, max_post,
            progress, gating, jobs, scheduler, stats, checkpoint)
    try:
        with gc_frozen():
            try:
                return _construct_theorem5(*args)
            except ValueGainOverflow:
                # boosts with any weight put the steps' on values next to Omega (``_boost_weights``); tried
                # only here, so every network the powers of two build stays as it was
                return _construct_theorem5(*args, wide_boosts=True)
    except ConditionFailure:
        raise
    except ConstructionError as e:
        F = get_format(fmt)
        branch = theorem_branch(F)
        if branch.startswith("not covered"):
            raise ConstructionError(f"{e} [{F.name} is outside both branches of the paper's "
                                    f"theorems ({branch}): there the construction is an attempt, not a "
                                    f"consequence of Conditions 1-3]") from None
        raise


def _construct_theorem5(activation, fmt, points, values, upstream, gradients, implementation, verify_result,
                        max_post, progress, gating, jobs, scheduler, stats, checkpoint=None, wide_boosts=False):
    from ..verify import VerifyResult

    if gating not in ("auto", "points", "slices"):
        raise CondcheckError(f"gating must be 'auto', 'points' or 'slices', not {gating!r}")
    if scheduler is not None:
        from ..distributed import Engine
        Engine(scheduler)                 # (refuses an argument that is not an address; starts nothing)
    jobs = resolve_jobs(jobs)
    build = Build(activation, fmt, points, values, upstream, gradients, implementation, verify_result, max_post,
                  gating, wide_boosts)
    N, d = build.X.shape
    total = N * d + N
    report = (lambda done: progress(done, total)) if progress else None
    if progress:
        progress(0, total)
    chunks = point_chunks(N, d, build.small_format, by_coordinate=build.sliced)
    spread = build.spread_chunks(chunks)
    if checkpoint is not None:
        if not spread:
            raise CondcheckError("checkpoint: only constructions spread in chunks keep checkpoints (formats of more "
                                 "than 4,096 values on more than tuning.SPREAD_FROM points in one coordinate); "
                                 "this one runs without")
        from .checkpoint import Checkpoint
        checkpoint = Checkpoint(checkpoint, build)
    if spread:
        # large formats on large domains: chunks of fresh contexts, in this process or on Dask workers
        # (``spread``); each verifies nothing itself (the network is verified below, by parts)
        from .spread import run_spread
        net, checked = run_spread(build, chunks, jobs, scheduler, report, checkpoint)
        if stats is not None:
            stats.update(build.spread_stats)
    else:
        build.prepare()
        checked = run_rounds(chunks, build.rounds, build.combine, jobs, report)
        net = build.assembled[0]
    if verify_result:
        # every point: by the chunks that built the value branches (side by side in the workers), else here
        res = VerifyResult.merged(checked) if checked[0] is not None else verify_points(net, build.claim, range(N))
        if not res.ok:
            raise ConstructionError("the constructed network failed exact verification: " + res.summary())
    return net, build.claim
