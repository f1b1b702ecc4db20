"""Speculation: how the chunks of a spread construction (``spread``) agree without being alive at once.

Why the network does not depend on the workers: a chunk's result is defined as its rounds
(``build.Build.rounds``) run from a fresh context with the true agreements between rounds (what
``Build.combine`` makes of every chunk's report), and everything else a chunk reads is a pure function
of the construction's arguments, made again in each worker process (``spread._worker_build``, with
the calling process's tunables).  The forked chunks of ``chunks.run_rounds`` keep each chunk's state (its context,
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
what it would agree on with the sample's reports of the same round (``hints``; a sample chunk run again
reads the other sampled chunks', not its own earlier report, whose gate counts would count its points
twice).  The hints change only what a chunk is fed before the truth is known, so which chunks run
again, never the network.
"""
from __future__ import annotations

from . import tuning
from .errors import ConstructionError


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
    (``sample_of``) run first, and every later run reads their reports as hints (a sampled chunk the
    others').  A ConstructionError of a chunk is raised at the round where it happened with true
    agreements before it, the first chunk's first, as the chunks run in one process would raise it;
    but a sampled chunk that raises before its first report (no agreement fed: a gap no separator
    splits) stops the construction after the sample, with the first such chunk's error (a chunk not
    yet run may hold an earlier one).  ``stats`` (a dict) gets "chunk_runs" (chunks run, again ones
    included), "passes" and "sample" (the chunks of the first pass, or 0)."""
    history = []
    results = [None] * len(chunks)
    size = tuning.SPREAD_SAMPLE_CHUNKS if sample is None else sample
    first = sample_of(len(chunks), size) if size < len(chunks) else []
    sampled = {}
    stats = {} if stats is None else stats
    stats.update(chunk_runs=0, passes=0, sample=len(first))

    def run_pass(todo):
        stats["chunk_runs"] += len(todo)
        stats["passes"] += 1
        others = {i: hints_of([r for j, r in sampled.items() if j != i]) for i in todo if i in sampled}
        shared = hints_of(list(sampled.values()))
        items = [(chunks[i], [view(chunks[i], h) for h in history], others.get(i, shared)) for i in todo]
        for i, r in zip(todo, run(items)):
            results[i] = r
    if first:
        run_pass(first)
        sampled = {i: results[i] for i in first}
        for i in first:
            if isinstance(results[i]["reports"][0], BaseException):
                raise results[i]["reports"][0]
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
