"""Spread chunks: the chunks of a construction on a large format (``chunks.point_chunks`` beyond
``tuning.SPREAD_FROM`` points: the 16-bit boxes), each searched in a fresh context, run one after the
other in this process or side by side on Dask workers (``condcheck.distributed.Engine``), agreed on by
``speculation``; then the network is verified in parts of ``tuning.SPREAD_VERIFY_POINTS`` points, on
the workers too.  With a ``checkpoint`` every chunk's result is kept on disk as it arrives, and a run
again reads it back (``checkpoint``).

The network does not depend on the workers (``speculation``): each worker makes its own ``Build`` from
the construction's arguments and this process's tunables (``_worker_build``).

Dask is imported only here, and only when a construction spreads over workers.
"""
from __future__ import annotations

import uuid

from ..distributed import peak_rss_mib
from . import tuning
from .speculation import agree, speculate

#: the memory limit of each LocalCluster worker (its nanny restarts a worker above 95 % of it; the task
#: it ran is then retried on another): the Engine's 2 GiB.  It was 4 GiB while two of the searches'
#: memo tables grew with the domain (a bfloat16 chunk at depth 13 reached 3.0 GiB, the float16 sigmoid
#: box's workers 2.4 GiB; docs/boxes.md)
MEMORY_LIMIT = "2GiB"


def verify_parts(n_points: int) -> list:
    """The point ranges the network is verified in."""
    step = max(1, tuning.SPREAD_VERIFY_POINTS)
    return [range(a, min(n_points, a + step)) for a in range(0, n_points, step)]


def run_spread(build, chunks, jobs: int, scheduler, report, checkpoint=None):
    """(network, verification results of its parts, or [None] without verification): ``build``'s chunks
    in this process (jobs = 1 and no scheduler) or on Dask workers (``jobs`` of them on a LocalCluster,
    or the cluster at ``scheduler``); ``report(done)`` gets the points done so far.  With ``checkpoint``
    (a ``checkpoint.Checkpoint``) the chunk results kept there are read instead of run, and every result
    run is kept.  ``build.spread_stats`` gets the counts and the peaks (MiB) of this process and of the
    workers: in the chunks, in the verification, and both (``worker_peak_mib``)."""
    parts = verify_parts(len(build.X))
    stats = build.spread_stats = {"chunks": len(chunks), "verify_parts": len(parts) if build.verify_result else 0}
    counted, points_done = set(), [0]

    def counting(items, on_result=None):
        """A result's callback: ``on_result``, then the chunk's points added to the progress (once a chunk)."""
        def done(i, r):
            if on_result:
                on_result(i, r)
            if report and id(items[i][0]) not in counted:
                counted.add(id(items[i][0]))
                points_done[0] += r["count"]
                report(points_done[0])
        return done

    def kept(runner):
        """``runner`` (items, on_result) -> results, with the checkpoint's results read and kept."""
        def run(items):
            out = [checkpoint.load(c, h) if checkpoint else None for c, h, _ in items]
            for i, r in enumerate(out):
                if r is not None:
                    counting(items)(i, r)
            todo = [i for i, r in enumerate(out) if r is None]

            def keep(j, r):
                out[todo[j]] = r
                if checkpoint:
                    checkpoint.save(items[todo[j]][0], items[todo[j]][1], r)
            runner([items[i] for i in todo], keep)
            return out
        return run
    if jobs <= 1 and scheduler is None:
        def here(items, on_result):
            done = counting(items, on_result)
            for i, (chunk, history, hints) in enumerate(items):
                done(i, speculate(build, chunk, history, hints))
        stats.update(workers=0, engine="this process")
        net = _assembled(build, agree(build, chunks, kept(here), stats))
        _kept_stats(stats, checkpoint)
        checked = [verify_part(net, build.claim, p) for p in parts] if build.verify_result else [None]
        stats["caller_peak_mib"] = peak_rss_mib()
        return net, checked
    from ..distributed import Engine
    # (the chunks' progress is the construction's own; the verification's follows ``condcheck --progress``)
    with Engine(scheduler, jobs if scheduler is None else None, memory_limit=MEMORY_LIMIT, progress=None) as eng:
        stats.update(workers=eng.workers, engine=eng.kind)
        spec = _spec(build)

        def there(items, on_result):
            if items:
                eng.map(_chunk_task, items, "theorem5 chunks", counting(items, on_result), shared=spec, progress=False)
        net = _assembled(build, agree(build, chunks, kept(there), stats))
        _kept_stats(stats, checkpoint)
        stats["chunk_worker_peak_mib"] = eng.worker_peaks()
        checked = [None]
        if build.verify_result:
            # the workers start the verification with nothing of the chunks: on a LocalCluster as new
            # processes (a bfloat16 relu box's workers held about 0.7 GiB after dropping their chunk
            # contexts, and one was lost receiving the network on top, docs/boxes.md); elsewhere they
            # drop their chunk contexts
            if not eng.restart_workers():
                eng.client.run(_release_builds)
            # (on a LocalCluster the workers memory-map one copy of the network, ``Engine.map``: sent to
            # each, a bfloat16 box's 0.62 GB took a worker to 1.3 GB while it arrived)
            checked = eng.map(_verify_task, [(p.start, p.stop) for p in parts], "theorem5 verification",
                              shared=(net, build.claim))
            stats["verify_worker_peak_mib"] = eng.worker_peaks()
            stats["shared_resends"] = eng.resends
        # every worker process's peak (a restarted worker has a new address, so an entry of its own)
        both = dict(stats["chunk_worker_peak_mib"])
        for w, v in (stats.get("verify_worker_peak_mib") or eng.worker_peaks()).items():
            both[w] = max(v, both.get(w, 0.0))
        stats["worker_peak_mib"] = both
        stats["caller_peak_mib"] = peak_rss_mib()
        return net, checked


def _assembled(build, parts):
    """``build.assemble(parts)``, its time shown in the current progress style (minutes on a bfloat16 box)."""
    from ..progress import working
    with working("assembling the network"):
        return build.assemble(parts)


def _kept_stats(stats, checkpoint):
    if checkpoint:
        stats.update(checkpoint_read=checkpoint.read, checkpoint_written=checkpoint.written,
                     checkpoint_unreadable=checkpoint.unreadable)


def _spec(build) -> dict:
    """What a worker makes its own ``Build`` from: the construction's arguments and this process's tunables."""
    return {"token": uuid.uuid4().hex, "args": build.args,
            "tuning": {k: getattr(tuning, k) for k in dir(tuning) if k.isupper()}}


#: the builds a worker process made (token -> Build), the last one only
_BUILDS: dict = {}


def _worker_build(spec):
    from .build import Build
    b = _BUILDS.get(spec["token"])
    if b is None:
        _BUILDS.clear()
        with tuning.overridden(spec["tuning"]):
            b = _BUILDS[spec["token"]] = Build(*spec["args"])
    return b


def _release_builds():
    """Drop a worker's ``Build``, hand its freed memory back to the system (after its last chunk), and
    reset the process's peak resident memory (Linux), so that the peak read after the verification is
    the verification's."""
    import ctypes
    import gc
    _BUILDS.clear()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):               # not glibc
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:                                 # not Linux
        pass


def _chunk_task(spec, item):
    """A worker's task: ``speculate`` on a chunk."""
    chunk, history, hints = item
    build = _worker_build(spec)
    with tuning.overridden(spec["tuning"]):
        return speculate(build, chunk, history, hints)


def verify_part(net, claim, points):
    """The exact verification of the claim on the points (a range): on the network pruned for them
    (``interval_pruning``: the same values and gradients there, the neurons their box can not tell from
    constants made constant, and compacted: ``interval_pruning.verify_pruned``) on the formats of at most
    16 bits, else as ``build.verify_points``."""
    from ..constructors.kit import enumerated
    from ..interval_pruning import verify_pruned
    from .build import verify_points
    if not enumerated(net.format) or net.ieee:
        return verify_points(net, claim, points)
    return verify_pruned(net, claim.points[points], lambda pruned: verify_points(pruned, claim, points))


def _verify_task(shared, item):
    """A worker's task: the exact verification of the network on points start .. stop - 1."""
    (net, claim), (start, stop) = shared, item
    return verify_part(net, claim, range(start, stop))
