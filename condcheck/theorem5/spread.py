"""Spread chunks: the chunks of a construction on a large format (``chunks.point_chunks`` beyond
``tuning.SPREAD_FROM`` points: the 16-bit boxes), each searched in a fresh context, run one after the
other in this process or side by side on Dask workers (``condcheck.distributed.Engine``); then the
network is verified in parts of ``tuning.SPREAD_VERIFY_POINTS`` points, on the workers too.

Why the network does not depend on the workers: a chunk's result is defined as its rounds
(``build.Build.rounds``) run from a fresh context with the true agreements between rounds (what
``Build.combine`` makes of every chunk's report), and everything else a chunk reads is a pure function
of the construction's arguments, made again in each worker process (``_worker_build``, with this
process's tunables).  The forked chunks of ``chunks.run_rounds`` keep each chunk's state (its context,
with a step row per point of the domain) alive between rounds; a 16-bit box has over 100 chunks, whose
states would not fit at once, so here a chunk runs all its rounds in one task: where it would need the
agreement of the others it *speculates* that it is what the chunk would agree on alone (its own depth,
its own points' gate counts), and records what it was fed (``speculate``).  ``agree`` then computes the
true agreements round by round from every chunk's reports, and runs a chunk again, with the true
agreements up to the first round where it was fed something else, until every chunk was fed the truth
(each pass fixes at least one more round).  A chunk whose speculation was right is not run again: it
would compute the same numbers.  The cost: chunks whose branches come out shallower than the deepest
chunk's (or whose steps need fewer layers) are searched twice.  To search fewer twice, a first pass runs
``tuning.SPREAD_SAMPLE_CHUNKS`` chunks spread over the domain (its ends included: on the bfloat16 gelu
box the end chunks' branches are 13 layers deep, the middle ones' 1), and every later run speculates
what it would agree on with the sample's reports of the same round (``hints``).  The hints change only
what a chunk is fed before the truth is known, so which chunks run again, never the network.

Dask is imported only here, and only when a construction spreads over workers.
"""
from __future__ import annotations

import uuid

from . import tuning
from .errors import ConstructionError

#: the memory limit of each LocalCluster worker (its nanny restarts a worker above 95 % of it; the task
#: it ran is then retried on another): the Engine's 2 GiB.  It was 4 GiB while two of the searches'
#: memo tables grew with the domain (a bfloat16 chunk at depth 13 reached 3.0 GiB, the float16 sigmoid
#: box's workers 2.4 GiB; docs/boxes.md)
MEMORY_LIMIT = "2GiB"


def view(chunk, agreed: dict) -> dict:
    """What a chunk reads of an agreement: every key, but only its own points' gate counts (a chunk of
    per-point gating reads the counts of the points whose value branches it builds)."""
    if "gates" not in agreed:
        return agreed
    return {**agreed, "gates": {zi: k for zi, k in agreed["gates"].items() if zi in chunk.points}}


def speculate(build, chunk, history, hints=()) -> dict:
    """Run the chunk's rounds from a fresh context: fed ``history`` (the agreements it reads, round by
    round), then what it would agree on with ``hints[k]`` (other chunks' reports of round k, those of
    the same kind as its own), or alone, up to the report that carries its branches.

    Returns {"reports": the report of each round (the last one the branches', or the ConstructionError
    the round raised), "fed": the agreement fed after each report but the last, "count": its progress
    count}."""
    count = [0]

    def report(k=1):
        count[0] += k
    build.for_spread()
    reports, fed = [], []
    gen = build.rounds(chunk, report)
    try:
        v = next(gen)
        while True:
            reports.append(v)
            if "branches" in v:
                break
            k = len(fed)
            if k < len(history):
                c = history[k]
            else:
                like = [h for h in (hints[k] if k < len(hints) else ()) if h.keys() == v.keys()]
                c = view(chunk, build.combine([v] + like))
            fed.append(c)
            v = gen.send(c)
    except ConstructionError as e:
        reports.append(e)
    finally:
        gen.close()
    return {"reports": reports, "fed": fed, "count": count[0]}


def sample_of(n_chunks: int, size: int) -> list:
    """The indices of ``size`` chunks spread evenly over n_chunks, the first and the last included (all
    of them when size >= n_chunks; none when size < 2)."""
    if size >= n_chunks:
        return list(range(n_chunks))
    if size < 2:
        return []
    return sorted({round(i * (n_chunks - 1) / (size - 1)) for i in range(size)})


def hints_of(results) -> list:
    """Per round, the reports of ``speculate`` results that speculation may read: not the branches'
    (they carry the network's parts) and not errors."""
    out = []
    for r in results:
        for k, x in enumerate(r["reports"]):
            if isinstance(x, dict) and "branches" not in x:
                out.extend([] for _ in range(k + 1 - len(out)))
                out[k].append(x)
    return out


def agree(build, chunks, run, stats=None, sample=None):
    """Every chunk's branches (``speculate``'s last report), each chunk fed the true agreements.

    ``run(items)`` runs ``speculate`` on (chunk, history, hints) items and returns their results in
    order.  With more chunks than ``sample`` (default ``tuning.SPREAD_SAMPLE_CHUNKS``), that many
    (``sample_of``) run first, and every later run reads their reports as hints.  A ConstructionError of
    a chunk is raised at the round where it happened with true agreements before it, the first chunk's
    first, as the chunks run in one process would raise it.  ``stats`` (a dict) gets "chunk_runs"
    (chunks run, again ones included), "passes" and "sample" (the chunks of the first pass, or 0)."""
    history = []
    results = [None] * len(chunks)
    size = tuning.SPREAD_SAMPLE_CHUNKS if sample is None else sample
    first = sample_of(len(chunks), size) if size < len(chunks) else []
    hints = []
    stats = {} if stats is None else stats
    stats.update(chunk_runs=0, passes=0, sample=len(first))

    def run_pass(todo):
        stats["chunk_runs"] += len(todo)
        stats["passes"] += 1
        items = [(chunks[i], [view(chunks[i], h) for h in history], hints) for i in todo]
        for i, r in zip(todo, run(items)):
            results[i] = r
    if first:
        run_pass(first)
        hints = hints_of([results[i] for i in first])
    todo = [i for i in range(len(chunks)) if results[i] is None]
    while True:
        run_pass(todo)
        k = len(history)
        todo = []
        while not todo:
            reps = [r["reports"][k] for r in results]
            for x in reps:
                if isinstance(x, BaseException):
                    raise x
            done = ["branches" in x for x in reps]
            if all(done):
                return [x["branches"] for x in reps]
            if any(done):
                raise ConstructionError("internal: the chunks took different numbers of rounds")  # pragma: no cover
            agreed = build.combine(reps)
            history.append(agreed)
            todo = [i for i, r in enumerate(results) if r["fed"][k] != view(chunks[i], agreed)]
            k += 1


def verify_parts(n_points: int) -> list:
    """The point ranges the network is verified in."""
    step = max(1, tuning.SPREAD_VERIFY_POINTS)
    return [range(a, min(n_points, a + step)) for a in range(0, n_points, step)]


def run_spread(build, chunks, jobs: int, scheduler, report):
    """(network, verification results of its parts, or [None] without verification): ``build``'s chunks
    in this process (jobs = 1 and no scheduler) or on Dask workers (``jobs`` of them on a LocalCluster,
    or the cluster at ``scheduler``)."""
    parts = verify_parts(len(build.X))
    stats = build.spread_stats = {"chunks": len(chunks), "verify_parts": len(parts) if build.verify_result else 0}
    if jobs <= 1 and scheduler is None:
        def run(items):
            out = []
            for chunk, history, hints in items:
                out.append(speculate(build, chunk, history, hints))
                if report:
                    report(out[-1]["count"])
            return out
        stats.update(workers=0, engine="this process")
        net = build.assemble(agree(build, chunks, run, stats))
        checked = [verify_part(net, build.claim, p) for p in parts] if build.verify_result else [None]
        return net, checked
    from ..distributed import Engine
    with Engine(scheduler, jobs if scheduler is None else None, memory_limit=MEMORY_LIMIT, progress=False) as eng:
        stats.update(workers=eng.workers, engine=eng.kind)
        spec = eng.client.scatter(_spec(build), broadcast=True)
        counted = set()

        def run(items):
            def done(i, r):
                if report and id(items[i][0]) not in counted:
                    counted.add(id(items[i][0]))
                    report(r["count"])
            return eng.map(_chunk_task, [(spec, *item) for item in items], "theorem5 chunks", done)
        net = build.assemble(agree(build, chunks, run, stats))
        checked = [None]
        if build.verify_result:
            held = eng.client.scatter((net, build.claim), broadcast=True)
            checked = eng.map(_verify_task, [(held, p.start, p.stop) for p in parts], "theorem5 verification")
        stats["worker_peak_mib"] = eng.worker_peaks()
        return net, checked


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


def _chunk_task(item):
    """A worker's task: ``speculate`` on a chunk."""
    spec, chunk, history, hints = item
    build = _worker_build(spec)
    with tuning.overridden(spec["tuning"]):
        return speculate(build, chunk, history, hints)


def verify_part(net, claim, points):
    """The exact verification of the claim on the points (a range): on the network pruned for them
    (``interval_pruning``: the same values and gradients there, the neurons their box can not tell from
    constants made constant) on the formats of at most 16 bits, else as ``build.verify_points``."""
    from ..constructors.kit import enumerated
    from ..interval_pruning import pruned_for
    from .build import verify_points
    if not enumerated(net.format) or net.ieee:
        return verify_points(net, claim, points)
    return verify_points(pruned_for(net, claim.points[points])[0], claim, points)


def _verify_task(item):
    """A worker's task: the exact verification of the network on points start .. stop - 1."""
    (net, claim), start, stop = item
    return verify_part(net, claim, range(start, stop))
