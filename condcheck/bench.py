"""Benchmarks (``condcheck bench``): the speed targets of the issues, with time and peak memory.

Each case runs in a fresh subprocess, so its time includes cold caches ("from a cold start") and its
peak memory is that process's maximum resident set size (and, where a construction ran worker
processes, the largest worker's; its CPU time includes theirs).  The Theorem 5 and 7 cases import the
construction's and the verification's modules (``IMPORTS``) before their clock starts: that import is
start-up, in the time reported with process start and imports.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

CASES = {}
#: case-name prefix -> the modules such a case imports before its clock starts: what a construction and
#: its verification load on first use (about 0.1-0.15 s), start-up counted in the time with process
#: start and imports, not in the case's
IMPORTS = {"theorem5-": ("condcheck.targets", "condcheck.theorem5", "condcheck.verify", "condcheck.netfile",
                         "condcheck.interpreters.tables"),
           "theorem7-": ("condcheck.targets", "condcheck.theorem7", "condcheck.verify", "condcheck.netfile",
                         "condcheck.interpreters.sparse")}


def case(name, target):
    def deco(fn):
        CASES[name] = (fn, target)
        return fn
    return deco


def select(cases) -> list:
    """The case names the command line asks for: every case (no arguments), a whole name exactly, else
    every name the argument prefixes (theorem5-gelu-float8_e4m3-box is not also ...-box2)."""
    return [n for n in CASES if not cases or any(n == c or (c not in CASES and n.startswith(c)) for c in cases)]


def _activation_tables(fmt_name, act):
    from .rounded_activation import get_rounded
    t = get_rounded(act, fmt_name).table()
    return f"{len(t.points):,} points, {t.fallback_count} certain-path evaluations"


for _fmt in ("bfloat16", "float16"):
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        case(f"tables-{_fmt}-{_act}", "sigma~ and sigma~' tables under 2 s")(
            lambda f=_fmt, a=_act: _activation_tables(f, a))


def _check(act, fmt_name):
    from .check import check_activation
    res = check_activation(act, fmt_name)
    return f"{act} on {fmt_name}: " + ", ".join(f"C{k} {res.conditions[k]['holds']}" for k in "123")


_CHECK_TARGETS = {"float8_e4m3": "check_activation under 1 s (8 bits)", "float6_e3m2fn": "under 1 s (8 bits or less)",
                  "bfloat16": "under 10 s (16 bits)", "float16": "under 10 s (16 bits)",
                  "float32": "under 30 s per activation", "float64": "under 30 s per activation"}
for _fmt, _target in _CHECK_TARGETS.items():
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        case(f"check-{_fmt}-{_act}", _target)(lambda f=_fmt, a=_act: _check(a, f))


def _exhaustive_float32(act, impl):
    """Every float32 value on the Dask engine (a LocalCluster on all cores): verdicts and how."""
    from .check import check_activation
    res = check_activation(act, "float32", impl, "exhaustive", progress=False)
    e = res.enumeration
    marks = "".join({True: "h", False: "F", None: "?"}[res.conditions[k]["holds"]] for k in "123")
    return (f"{act} float32 ({impl}): {marks}; {e['points']:,} values in {e['chunks']} chunks of "
            f"{e['magnitudes_per_chunk']:,} magnitudes (both signs) on {e['engine']}; chunks: "
            f"{e['chunk_cpu_seconds']:.0f} CPU s ({e['chunk_cpu_seconds'] / e['chunks']:.2f} per chunk), "
            f"{e['chunk_seconds']:.0f} s wall in the workers, "
            f"{e['chunks_evaluated_again']} chunks evaluated again; peak per worker "
            f"{max(e['worker_peak_mib'].values()):.0f} MiB")


def _exhaustive_float32_sample(act, impl, workers, n_chunks=32):
    """The summaries of n_chunks chunks spread over float32 (no verdict), on 1 or 2 workers: the
    scaling from 1 to 2 workers, and the per-chunk cost of the full check."""
    from conditions.chunked import CHUNK_MAGNITUDES, summarize
    from conditions.chunks import ChunkJob, plan_chunks

    from .distributed import Engine
    ranges = plan_chunks(0x7F800000, CHUNK_MAGNITUDES)
    pick = [ranges[i * len(ranges) // n_chunks] for i in range(n_chunks)]
    with Engine(workers=workers, progress=False) as eng:
        eng.map(summarize, [ChunkJob(act, "float32", impl, 0, 1 << 12)])      # warm up every worker's imports
        t0 = time.perf_counter()
        out = eng.map(summarize, [ChunkJob(act, "float32", impl, lo, hi) for lo, hi in pick])
        wall = time.perf_counter() - t0
        peaks = eng.worker_peaks()
    cpu = sum(s.cpu_seconds for s in out)
    return (f"{n_chunks} of the {len(ranges)} float32 chunks ({impl} {act}), evenly spread: {wall:.1f} s wall on "
            f"{workers} worker(s), {cpu:.1f} CPU s in the chunks ({cpu / n_chunks:.2f} per chunk); peak per worker "
            f"{max(peaks.values()):.0f} MiB; all {len(ranges)} chunks at this rate: "
            f"{wall * len(ranges) / n_chunks / 60:.0f} min")


for _act in ("tanh", "gelu", "sigmoid"):
    for _impl in ("exact", "float32-upcast", "torch"):
        case(f"exhaustive-float32-{_act}-{_impl}", "every float32 value, chunked on Dask (issue 31; hours on 2 cores)")(
            lambda a=_act, i=_impl: _exhaustive_float32(a, i))
        for _w in (1, 2):
            case(f"exhaustive-float32-{_act}-{_impl}-sample-{_w}worker{'s' if _w > 1 else ''}",
                 "32 evenly spread float32 chunks on 1 and on 2 workers: the scaling (issue 31)")(
                lambda a=_act, i=_impl, w=_w: _exhaustive_float32_sample(a, i, w))


def construct_box(act, fmt_name, seed=0, h_max=0.25):
    """Theorem 5 on the full d = 1 box of the activation with random targets, built and verified (a bench
    case; benchmarks/sufficiency.py runs it on every accepted pair)."""
    from .targets import full_box, random_targets
    from .theorem5 import construct_theorem5
    X = full_box(act, fmt_name, 1)
    f, h, g = random_targets(fmt_name, X, seed, h_max)
    net, claim = construct_theorem5(act, fmt_name, X, f, h, g)
    return (f"{len(X)} points (d = 1), random:{seed} values and gradients, |h*| <= {h_max}; depth {net.depth}, "
            f"{net.nonzero_parameters:,} nonzero parameters; verified")


case("theorem5-relu-float6_e3m2fn-box", "construct and verify")(lambda: construct_box("relu", "float6_e3m2fn", 1))
for _act in ("relu", "elu", "gelu", "swish", "tanh"):          # sigmoid's b2_6 box is not distinguishable
    case(f"theorem5-{_act}-b2_6-box", "construct and verify the full box of a custom format with E >= 6 (issue 4)")(
        lambda a=_act: construct_box(a, "b2_6"))
for _fmt in ("float8_e4m3", "float8_e5m2"):
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        case(f"theorem5-{_act}-{_fmt}-box", "construct and verify the full float8 box, d = 1, under 2 s (issue 4)")(
            lambda f=_fmt, a=_act: construct_box(a, f))


def _construct_box2(act, fmt_name, seed=0, h_max=0.25, grid=0):
    """Theorem 5 on the d = 2 box (the square of the d = 1 box's separable part: all of it but for
    sigmoid on float8_e5m2), or on a grid x grid part of it; sliced gating, verified."""
    import time

    import numpy as np

    from .formats import get_format
    from .targets import full_box, random_targets, separable_part
    from .theorem5 import construct_theorem5
    F = get_format(fmt_name)
    box = full_box(act, F, 1)
    c = separable_part(act, F, box)[:, 0]
    n_full = len(box)
    if grid:
        c = c[np.linspace(0, len(c) - 1, grid).round().astype(int)]
    X = np.array([(u, v) for u in c for v in c])
    f, h, g = random_targets(F, X, seed, h_max)
    t0 = time.perf_counter()
    net, claim = construct_theorem5(act, F, X, f, h, g, verify_result=False)
    t1 = time.perf_counter()
    from .verify import verify
    res = verify(net, claim, method="sparse")
    if not res.ok:
        raise RuntimeError(res.summary())
    t2 = time.perf_counter()
    part = f" (the box's coordinates without {n_full - len(c)} inseparable values)" if not grid and len(c) < n_full else ""
    return (f"{len(X):,} points{part} (d = 2), random:{seed} values and gradients, |h*| <= {h_max}; depth {net.depth}, "
            f"max width {max(net.widths[1:]):,}, {net.nonzero_parameters:,} nonzero parameters; built in "
            f"{t1 - t0:.1f} s, verified exactly ({res.method} interpreter) in {t2 - t1:.1f} s")


for _fmt in ("float8_e4m3", "float8_e5m2"):
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        case(f"theorem5-{_act}-{_fmt}-box2", "construct and verify the full float8 box, d = 2, under 60 s (issue 4)")(
            lambda f=_fmt, a=_act: _construct_box2(a, f))
        case(f"theorem5-{_act}-{_fmt}-grid64", "d = 2: a 64 x 64 grid of the float8 box (4,096 points)")(
            lambda f=_fmt, a=_act: _construct_box2(a, f, grid=64))


def _construct_sample(act, fmt_name, n, seed=0, h_max=0.25):
    from .targets import box_sample, random_targets
    from .theorem5 import construct_theorem5
    X = box_sample(act, fmt_name, 1, n, seed)
    f, h, g = random_targets(fmt_name, X, seed, h_max)
    net, claim = construct_theorem5(act, fmt_name, X, f, h, g)
    return (f"{n} random box points (d = 1), random:{seed} values and gradients, |h*| <= {h_max}; depth "
            f"{net.depth}, {net.nonzero_parameters:,} nonzero parameters; verified")


for _fmt in ("float16", "bfloat16"):
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        for _n in (256, 4096):
            case(f"theorem5-{_act}-{_fmt}-sample{_n}", "construct and verify 16-bit box samples (issue 4: 4,096 points)")(
                lambda f=_fmt, a=_act, n=_n: _construct_sample(a, f, n))

case("theorem5-relu-bfloat16-sample1024", "construct and verify 16-bit box samples: relu's last blocker layer aimed "
     "within its blockers' gains (point 466, gate on 2^-133, g*/h* = 2^-79.6)")(lambda: _construct_sample("relu", "bfloat16", 1024))


for _fmt in ("float32", "float64"):
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        for _n in (16, 256):
            case(f"theorem5-{_act}-{_fmt}-sample{_n}",
                 "construct and verify float32/float64 box samples (issue 4: 256 points)")(
                lambda f=_fmt, a=_act, n=_n: _construct_sample(a, f, n))


def _construct_spread(act, fmt_name, domain, seed=0, h_max=0.25, jobs=None):
    """Theorem 5 on a 16-bit domain of more than ``tuning.SPREAD_FROM`` points, its chunks on Dask workers
    (``theorem5.spread``; ``jobs`` of them, default every usable CPU; 1: all in this process): the full
    box (domain "box"), N box points ("sampleN") or sigmoid's distinguishable part ("domain": the values
    with |x| in [2^-12, M_sigma], ``spread_domain``).  The detail names the chunks, how many ran (again
    ones included), the workers and each worker's peak memory."""
    import time

    from .targets import box_sample, full_box, random_targets
    from .theorem5 import construct_theorem5
    if domain == "box":
        X = full_box(act, fmt_name, 1)
    elif domain == "domain":
        X = spread_domain(act, fmt_name)
    else:
        X = box_sample(act, fmt_name, 1, int(domain[len("sample"):]), seed)
    f, h, g = random_targets(fmt_name, X, seed, h_max)
    stats = {}
    t0 = time.perf_counter()
    net, claim = construct_theorem5(act, fmt_name, X, f, h, g, jobs=jobs, stats=stats)
    seconds = time.perf_counter() - t0
    peaks = ", ".join(f"{v:,.0f}" for v in stats.get("worker_peak_mib", {}).values()) or "-"
    return (f"{len(X):,} points (d = 1), random:{seed} values and gradients, |h*| <= {h_max}; depth {net.depth}, "
            f"{net.nonzero_parameters:,} nonzero parameters; built and verified in {seconds:.1f} s; "
            f"{stats.get('chunks', 1)} chunks ({stats.get('chunk_runs', 1)} runs, {stats.get('sample', 0)} of them "
            f"the sample), {stats.get('verify_parts', 0)} "
            f"verification parts, {stats.get('engine', 'this process')}; worker peaks {peaks} MiB")


def spread_domain(act, fmt_name):
    """The bfloat16 box without the values of magnitude below 2^-12 (but 0): where condcheck's separator
    search splits every gap of sigmoid (its box is not distinguishable below 2^-98, and the restricted
    search leaves the gaps below about 2e-4 open, ``separators.restricted``)."""
    import numpy as np

    from .targets import full_box
    X = full_box(act, fmt_name, 1)
    return X[(np.abs(X[:, 0]) >= 2.0 ** -12) | (X[:, 0] == 0)]


for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
    case(f"theorem5-{_act}-float16-box", "the full float16 box, d = 1 (57,345-59,393 points), on Dask workers, "
                                          "under 30 min on 2 cores for gelu, peak under 4 GiB per process (issue 31)")(
        lambda a=_act: _construct_spread(a, "float16", "box"))
    case(f"theorem5-{_act}-bfloat16-box" if _act != "sigmoid" else "theorem5-sigmoid-bfloat16-domain",
         "the largest distinguishable bfloat16 domain condcheck names, on Dask workers (issue 31): the box, for "
         "sigmoid its values with |x| >= 2^-12")(
        lambda a=_act: _construct_spread(a, "bfloat16", "domain" if a == "sigmoid" else "box"))
for _jobs in (1, 2):
    case(f"theorem5-gelu-float16-sample16384-workers{_jobs}", "how the time of a spread construction falls from 1 "
         "to 2 workers (32 chunks of 512 points; 1: all in this process) (issue 31)")(
        lambda j=_jobs: _construct_spread("gelu", "float16", "sample16384", jobs=j))


@case("assemble-step-rows-26m", "one Theorem 5 layer of 129,000 step rows of 200 weights each (26 M, about "
      "half the step rows of the bfloat16 gelu box): peak memory, as the caller assembles it (issue 31)")
def _assemble_step_rows(rows=129_000, terms=200):
    """The layer ``assemble`` makes of step rows given as (columns, weights) arrays: a separator
    weight, then the chain's +- pairs; its peak is the assembly's largest (docs/boxes.md)."""
    import numpy as np

    from .theorem5.layers import Cols
    cols = Cols()
    half = np.arange(terms // 2)
    for i in range(rows):
        c, w = np.empty(terms + 1, np.int64), np.empty(terms + 1)
        c[0], w[0] = 200_000 + i, 0.5
        c[1::2], w[1::2] = 2 * half + (i % 50) * 2, 2.0 ** -half
        c[2::2], w[2::2] = 2 * half + (i % 50) * 2 + 1, -(2.0 ** -half)
        cols.add((c, w), 0.0)
    layer = cols.layer(200_000 + rows, None)
    return f"{layer.weight.nnz:,} weights in {rows:,} rows"


def _construct_sigmoid_domain(fmt_name, n, seed=0, h_max=0.25):
    """sigmoid on n points with |x| in [2^-12, 2^6] (``targets.distinguishable_sample``): its float32 and
    float64 boxes are not distinguishable (tiny neighbouring inputs share sigma~ and sigma~' under every
    first-layer neuron, so no network separates them and the box is refused), this part of it is."""
    from .targets import distinguishable_sample, random_targets
    from .theorem5 import construct_theorem5
    X = distinguishable_sample(fmt_name, n, seed)
    f, h, g = random_targets(fmt_name, X, seed, h_max)
    net, claim = construct_theorem5("sigmoid", fmt_name, X, f, h, g)
    return (f"{n} points with |x| in [2^-12, 2^6] (d = 1), random:{seed} values and gradients, |h*| <= {h_max}; "
            f"depth {net.depth}, {net.nonzero_parameters:,} nonzero parameters; verified")


for _fmt in ("float32", "float64"):
    for _n in (16, 256):
        case(f"theorem5-sigmoid-{_fmt}-domain{_n}",
             "sigmoid on a distinguishable part of the box (the box is refused), construct and verify")(
            lambda f=_fmt, n=_n: _construct_sigmoid_domain(f, n))
# bfloat16 at 4,096 points (issue 4): a distinguishable domain, since targets.separable_box_sample is limited
# to 8-bit formats (its repeated separator search grew past 20 GiB on bfloat16)
case("theorem5-sigmoid-bfloat16-domain4096", "sigmoid on 4,096 distinguishable bfloat16 points (issue 4; the box "
     "is refused), construct and verify")(lambda: _construct_sigmoid_domain("bfloat16", 4096))


def _theorem7(act, fmt_name, n_points, seed=0, grid=0, separable=False, subbox=0):
    """Theorem 7 on n_points points of the box (0: the full box; grid > 0: a grid x grid grid of the box,
    d = 2, one table per coordinate; subbox > 0: the sub-box of the subbox consecutive box values in the
    middle of each coordinate, d = 2), random odd tables on every |y| <= H_sigma."""
    import time

    import numpy as np

    from .paper import paper_constants
    from .formats import get_format
    from .targets import full_box, random_odd_tables, separable_part
    from .theorem7 import construct_theorem7
    F = get_format(fmt_name)
    X = full_box(act, F, 1)
    if grid or subbox:
        if grid:
            g = X[np.linspace(0, len(X) - 1, grid).round().astype(int), 0]
        else:
            g = X[(len(X) - subbox) // 2:(len(X) - subbox) // 2 + subbox, 0]
        X = np.array([(u, v) for u in g for v in g])
    elif n_points:
        X = X[np.sort(np.random.default_rng(seed).choice(len(X), n_points, replace=False))]
    n_box = len(X)
    if separable:
        X = separable_part(act, F, X)
    Y = F.values()
    Y = Y[np.abs(Y) <= float(paper_constants(act, F)["H_sigma"])]
    f, G = random_odd_tables(F, X, Y, seed, per_coordinate=bool(grid or subbox))
    t0 = time.perf_counter()
    res = construct_theorem7(act, F, X, f, G, upstream=Y, verify_result=False)
    t1 = time.perf_counter()
    from .theorem7.assemble import finish
    res = finish(res.network, res.claim, res.layers, True)
    t2 = time.perf_counter()
    dropped = f" (of the {n_box}-point box: {n_box - len(X)} inseparable points left out)" if separable else ""
    return (f"{len(X)} points{dropped} (d = {X.shape[1]}) x {len(Y)} upstream values y, random:{seed} odd tables; depth "
            f"{res.depth} (paper bound {res.paper_bound}), max width {max(res.widths[1:]):,}, "
            f"{res.network.nonzero_parameters:,} nonzero parameters; built in {t1 - t0:.1f} s, verified exactly "
            f"(sparse interpreter) in {t2 - t1:.1f} s")


for _fmt in ("float8_e4m3", "float8_e5m2"):
    for _act in ("relu", "elu", "gelu", "swish", "sigmoid", "tanh"):
        case(f"theorem7-{_act}-{_fmt}-8points", "construct and verify 8 points x every |y| <= H_sigma")(
            lambda f=_fmt, a=_act: _theorem7(a, f, 8))
        case(f"theorem7-{_act}-{_fmt}-box", "the full float8 box x every |y| <= H_sigma, built and verified "
                                           "under 60 s (issue 5)")(lambda f=_fmt, a=_act: _theorem7(a, f, 0))
case("theorem7-sigmoid-float8_e5m2-box-separable", "the sigmoid float8_e5m2 box is not distinguishable (the -box "
     "case is refused, as in theorem5): its separable part x every |y| <= H_sigma")(
    lambda: _theorem7("sigmoid", "float8_e5m2", 0, separable=True))
for _act in ("tanh", "gelu"):
    case(f"theorem7-{_act}-float8_e4m3-grid8x8", "d = 2: an 8 x 8 grid of the float8_e4m3 box x every |y| <= "
                                               "H_sigma (issue 5: at least 64 points)")(
        lambda a=_act: _theorem7(a, "float8_e4m3", 0, grid=8))
    for _n in (16, 32, 46):
        case(f"theorem7-{_act}-float8_e4m3-subbox{_n}x{_n}", f"d = 2: the {_n} x {_n} sub-box in the middle of the "
             f"float8_e4m3 box (the consecutive values around 0) x every |y| <= H_sigma: how memory grows towards "
             f"the full box (issue 31)")(lambda a=_act, n=_n: _theorem7(a, "float8_e4m3", 0, subbox=n))


def _prove(act, fmt_name):
    """condcheck prove: check, write the Coq development, compile it (make -j on the usable cores)."""
    import tempfile

    from .proofs import prove
    with tempfile.TemporaryDirectory() as d:
        r = prove(act, fmt_name, f"{d}/dev", quiet=True)
    c = r.coq or {}
    if not r.ok:
        raise RuntimeError(f"Coq did not accept the development: {c.get('unexpected_assumptions') or c.get('log', '')[-300:]}")
    return (f"{act} on {fmt_name}: {r.facts['sigma']} + {r.facts['dsigma']} facts; Coq {c['cpu_seconds']:.1f} s CPU, "
            f"{c['seconds']:.1f} s wall, peak {c['peak_memory_mb']:.0f} MiB")


def _prove_network(act, fmt_name):
    """condcheck prove --network on the full d = 1 box Theorem 5 network (built first, not timed apart)."""
    import tempfile

    from .netfile import save_network
    from .proofs import prove_network
    from .targets import full_box, random_targets
    from .theorem5 import construct_theorem5
    X = full_box(act, fmt_name, 1)
    f, h, g = random_targets(fmt_name, X, 0, 0.25)
    net, claim = construct_theorem5(act, fmt_name, X, f, h, g)
    with tempfile.TemporaryDirectory() as d:
        save_network(f"{d}/net.json", net, claim)
        r = prove_network(f"{d}/net.json", f"{d}/dev", quiet=True)
    c = r.coq or {}
    if not r.ok:
        raise RuntimeError(f"Coq did not accept the development: {c.get('unexpected_assumptions') or c.get('log', '')[-300:]}")
    return (f"{len(X)} points, depth {net.depth}, {net.nonzero_parameters:,} nonzero parameters; "
            f"{r.facts['sigma']} + {r.facts['dsigma']} facts; Coq {c['cpu_seconds']:.1f} s CPU, "
            f"{c['seconds']:.1f} s wall, peak {c['peak_memory_mb']:.0f} MiB")


for _act in ("relu", "gelu", "sigmoid"):
    case(f"prove-{_act}-float8_e4m3", "condcheck prove (issue 30): under 60 s of Coq time, peak under 4 GiB")(
        lambda a=_act: _prove(a, "float8_e4m3"))
for _act in ("relu", "gelu"):
    case(f"prove-network-{_act}-float8_e4m3-box", "condcheck prove --network, the full d = 1 box Theorem 5 network "
                                                  "(issue 30): under 10 minutes, peak under 4 GiB")(
        lambda a=_act: _prove_network(a, "float8_e4m3"))


@case("interpreter-float16-depth10-width256", "forward and backward on all 65,536 float16 inputs under 10 s")
def _interpreter():
    import numpy as np
    import scipy.sparse as sp

    from .formats import get_format
    from .network import Layer, Network
    from .rounding import round_array

    fmt = get_format("float16")
    rng = np.random.default_rng(0)
    terms = 4                                   # nonzero weights per row, as in constructed networks

    def layer(rows, cols, k):
        r = np.repeat(np.arange(rows), k)
        c = np.concatenate([rng.choice(cols, k, replace=False) for _ in range(rows)])
        w = round_array(rng.standard_normal(rows * k) / 4, fmt)[0]
        return Layer(sp.csr_matrix((w, (r, c)), shape=(rows, cols)), round_array(rng.standard_normal(rows) / 8, fmt)[0])

    first = layer(256, 1, 1)
    first.weight.data[:] = np.ldexp(np.sign(first.weight.data), -6)   # |w x| <= 1024: no overflow on any input
    layers = [first] + [layer(256, 256, terms) for _ in range(8)] + [layer(1, 256, 256)]
    net = Network("float16", "tanh", layers)              # tanh keeps hidden values bounded
    X = fmt.values().reshape(-1, 1)
    net.evaluate(X, np.full(len(X), 0.5))
    return (f"{len(X):,} inputs, depth {net.depth}, width 256, {terms} nonzero weights per hidden row "
            f"({net.nonzero_parameters:,} nonzero parameters)")


def whole_process(args, cwd=None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident MiB of one ``python -m condcheck ARGS`` process, start-up
    included (CPU seconds: the figure to compare on a loaded machine)."""
    import os

    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "condcheck", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace").strip()
    p.stderr.close()
    if p.returncode not in (0, 1):
        raise RuntimeError(f"condcheck {' '.join(args)} exited with {p.returncode}: {err[-300:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _front_door(args, limit: float) -> str:
    seconds, cpu, peak = whole_process(args)
    return (f"condcheck {' '.join(args)}: {seconds:.2f} s whole process, {cpu:.2f} CPU s (target {limit} s), "
            f"peak {peak:.1f} MiB; {'within' if seconds < limit else 'OVER'} the target")


case("front-door-help", "whole process `condcheck --help` under 0.5 s (issue 29)")(
    lambda: _front_door(["--help"], 0.5))
case("front-door-check", "whole process `condcheck check gelu float8_e4m3` under 1.5 s (issue 29)")(
    lambda: _front_door(["check", "gelu", "float8_e4m3"], 1.5))


def _verify_vs_construct(theorem: str, act: str, fmt_name: str) -> str:
    """Whole-process times of ``construct`` (build and verify) and of ``verify`` of the file it wrote."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "net.json")
        built, built_cpu, built_peak = whole_process(["construct", theorem, act, fmt_name, "--domain", "full", "--targets",
                                            "random:1", "--out", out, "--quiet"])
        size = os.path.getsize(out)
        checked, checked_cpu, checked_peak = whole_process(["verify", out, "--quiet"])
    return (f"{theorem} {act} {fmt_name} full box: construct {built:.2f} s ({built_cpu:.2f} CPU s, peak "
            f"{built_peak:.1f} MiB), file {size / 2**20:.2f} MiB, verify {checked:.2f} s ({checked_cpu:.2f} CPU s, "
            f"peak {checked_peak:.1f} MiB): verify / construct = {checked / built:.2f} (wall), "
            f"{checked_cpu / built_cpu:.2f} (CPU); verify {'faster' if checked < built else 'NOT faster'} (wall)")


case("front-door-verify-vs-construct", "whole process: verify of a network file faster than its construction "
     "(issue 29; Theorem 5, gelu, full float8_e4m3 box)")(
    lambda: _verify_vs_construct("theorem5", "gelu", "float8_e4m3"))
case("front-door-verify-vs-construct-theorem7", "the same for Theorem 7 (relu, full float6_e3m2fn box)")(
    lambda: _verify_vs_construct("theorem7", "relu", "float6_e3m2fn"))


def machine_reference() -> float:
    """Seconds of a fixed workload that does not change with condcheck's code: a pure-Python loop and
    many numpy operations on arrays of a few hundred values, the two costs that dominate the
    constructions on 8-bit formats.  The machines here drift (the same code and case took 1.94 s one
    day and 2.8-3.1 s another, and a Python loop 1.3 s and 1.8 s an hour apart), so every case reports
    this beside its time: times are comparable only at similar reference times."""
    import numpy as np

    t0 = time.perf_counter()
    acc = 0
    for i in range(1_000_000):
        acc += i * i % 7
    a = np.arange(225, dtype=np.float64)
    b = a[::-1].copy()
    for _ in range(20_000):
        c = a * b
        c += a
        np.minimum.reduce(c)
        np.searchsorted(a, c)
    return time.perf_counter() - t0


def run_case(name: str) -> dict:
    """One case, timed: wall seconds, CPU seconds of this process and its worker processes (the
    constructions' chunks, ``theorem5.chunks``), and the peak resident memory of this process and of the
    largest worker (each worker shares this process's memory until it writes to it, so the two together
    bound the machine's use from above: peak + workers x worker peak); and, measured just before in
    the same process, the machine's reference time (``machine_reference``)."""
    import importlib
    import resource

    for prefix, modules in IMPORTS.items():
        if name.startswith(prefix):
            for module in modules:
                importlib.import_module(module)
    reference = machine_reference()

    def children_cpu():
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime
    fn, target = CASES[name]
    t0, c0, w0 = time.perf_counter(), time.process_time(), children_cpu()
    detail = fn()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0 + children_cpu() - w0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB on Linux
    worker_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"case": name, "seconds": round(elapsed, 3), "cpu_seconds": round(cpu, 3), "peak_mib": round(peak, 1),
            "worker_peak_mib": round(worker_peak, 1), "target": target, "detail": detail,
            "reference_seconds": round(reference, 3)}


def _run_once(name: str) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", f"import json,condcheck.bench as b; print(json.dumps(b.run_case({name!r})))"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"case": name, "error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # (without the machine reference, which runs in the same process before the case)
    res["wall_seconds_with_startup"] = round(time.perf_counter() - t0 - res["reference_seconds"], 3)
    return res


def run(names, echo, repeat: int = 1) -> list[dict]:
    """Each case ``repeat`` times, each time in a fresh process; the result of the fastest run, with the
    seconds of every run (``runs``) and the largest peak (times on a shared machine vary by +-0.5 s)."""
    results = []
    for name in names:
        runs = [_run_once(name) for _ in range(repeat)]
        bad = [r for r in runs if "error" in r]
        if bad:
            res = bad[0]
        else:
            res = dict(min(runs, key=lambda r: r["seconds"]))
            res["peak_mib"] = max(r["peak_mib"] for r in runs)
            res["worker_peak_mib"] = max(r.get("worker_peak_mib", 0.0) for r in runs)
            res["runs"] = [r["seconds"] for r in runs]
            res["reference_runs"] = [r["reference_seconds"] for r in runs]
        echo(res)
        results.append(res)
    return results
