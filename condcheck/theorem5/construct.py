"""``construct_theorem5``: the whole construction, layer by layer, then exact verification.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import CondcheckError
from ..formats import get_format
from ..op_tables import op_tables
from . import tuning
from .assemble import _assemble, _Constants
from .boosts import _lifted_boost, _padded_split, _reboosts, _sharpened_split, _step_split
from .chunks import gc_paused, point_chunks, resolve_jobs, run_rounds
from .context import _Ctx
from .errors import ConditionFailure, ConstructionError, ValueGainOverflow
from .gates import _gate_push_need
from .kit import Kit
from .search import _gradient_branches
from .sliced import _SlicedCtx
from .states import _require_conditions, find_states
from .steps import _separator_chooser, Step


def construct_theorem5(activation, fmt, points, values, upstream, gradients, implementation="exact",
                       verify_result=True, max_post=None, progress=None, gating="auto", jobs=None):
    """Build a network f with f(x) = values and D_(f,x)(upstream) = gradients on every point.

    ``progress(done, total)`` is called once per point and coordinate for the gradient branches, then once
    per point for the values (total N d + N; with worker processes, in steps every 0.2 s).
    ``gating``: "points" (each point's gates read the gating steps), "slices" (d >= 2: AND gates of
    slice neurons, ``_SlicedCtx``) or "auto" (slices for d >= 2 beyond EXACT_GATE_POINTS points, where
    per-point gates would cost N x N rounded sums to build and to verify).

    On formats outside both branches of the paper's theorems (E < 4) the construction is an attempt:
    its errors say so.

    ``jobs``: the worker processes for the per-point searches (default ``tuning.JOBS``, else the
    environment variable CONDCHECK_JOBS, else the usable CPUs; 1 runs everything in this process).  The
    network does not depend on it (``chunks``)."""
    from ..check import theorem_branch

    args = (activation, fmt, points, values, upstream, gradients, implementation, verify_result, max_post,
            progress, gating, jobs)
    try:
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
                        max_post, progress, gating, jobs, wide_boosts=False):
    from ..netfile import Claim
    from ..verify import verify as _verify

    from ..targets import validate

    if gating not in ("auto", "points", "slices"):
        raise CondcheckError(f"gating must be 'auto', 'points' or 'slices', not {gating!r}")
    F = get_format(fmt)
    jobs = resolve_jobs(jobs)
    kit = Kit(activation, F, implementation)
    kit.wide_boosts = wide_boosts
    X = np.asarray(points, float)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    X, fv, hv, gv = validate(F, kit.act.name, X, values, upstream, gradients)
    N, d = X.shape
    st = find_states(kit, _require_conditions(kit, F, implementation))
    L = st.L

    # constants: constant neurons whose values are positive powers of two
    cz, ct = st.constants
    if len(cz) == 0:
        raise ConditionFailure(f"Condition 1 (constants) fails: {kit.act.name} takes no positive power of two "
                                f"value on {F.name}")

    # ---- steps ------------------------------------------------------------------------------------------
    coord_vals = [np.unique(X[:, j]) for j in range(d)]
    coord_idx = [np.searchsorted(coord_vals[j], X[:, j]) for j in range(d)]
    push_need = _gate_push_need(st)
    steps: list[Step] = []
    step_pre = []            # pre-activation of each step on its coordinate's values
    step_of = {}
    for j in range(d):
        vals = coord_vals[j]
        if len(vals) < 2:
            continue
        choose = _separator_chooser(kit, vals, st)
        for gap in range(1, len(vals)):
            for up in (True, False):
                ch = choose(gap, up)
                if ch is None:
                    raise ConstructionError(
                        f"distinguishability fails: no neuron T(w x_{j + 1} + b) separates coordinate values "
                        f"<= {float(vals[gap - 1])!r} from >= {float(vals[gap])!r} monotonically")
                w, b, s0, kappa0 = ch
                n = kit.T(kit.row([(w, vals)], b))
                best, why = _step_split(kit, st, n, s0, kappa0, push_need)
                sharpen = ()
                if best is None and op_tables(F) is not None:
                    # only where the separator does not split: sharpening layers first
                    on_side = np.arange(len(vals)) >= gap if up else np.arange(len(vals)) < gap
                    layers, n2, best2 = _sharpened_split(kit, st, n, on_side, push_need)
                    if layers is not None:
                        sharpen, n, best = tuple(layers), n2, best2
                if best is None:
                    raise ConstructionError(f"step at coordinate {j + 1} gap {gap}: {why}")
                _, s, kappa, on, (pre, k0, K), ba, bc = best
                lift = _lifted_boost(kit, st, pre, on, 2 * push_need) if best[0] < 2 * push_need else None
                lift = lift if lift is not None and lift[2] > best[0] else None
                if lift is not None:
                    (ba, bc), lift = lift[0], (lift[1],)
                pre = kit.add(kit.mul(ba, kit.T(pre)), bc)
                for a2, c2 in lift or ():
                    pre = kit.add(kit.mul(a2, kit.T(pre)), c2)
                step_of[(j, gap, up)] = len(steps)
                steps.append(Step(j, gap, up, w, b, s, kappa, k0, K, boost_a=ba, boost_c=bc, sharpen=sharpen,
                                  lift=lift or ()))
                step_pre.append((pre, on))
    # every step spans the same layers: a step with fewer sharpening layers than the deepest is boosted
    # again after its boost (each boost keeps L dead and its on values on one side of L, so the step
    # stays a step), else sharpened to the full depth (one layer deeper for all steps when some step can
    # not be padded: a longer greedy chain can split where a shorter one did not); without sharpening
    # (every format but the narrow 8-bit ones) nothing changes.  With wide boosts (a retry for large
    # upstream values, see _boost_weights) every step is boosted twice: one boost can leave an on value
    # near L far from Omega (swish~ on float8_e4m3: the step's on value -0.23 boosts to at most 48, the
    # second boost takes it to 224)
    depth = max([len(s.sharpen) + len(s.lift) for s in steps] + [1 if kit.wide_boosts else 0])
    while True:
        padded, failure = [], None
        for i, s in enumerate(steps):
            pre, on = step_pre[i]
            extra = _reboosts(kit, st, pre, on, depth - len(s.sharpen) - len(s.lift))
            if extra is not None:
                padded.append((None, extra))
                continue
            r = _padded_split(kit, st, kit.T(kit.row([(s.w, coord_vals[s.coord])], s.b)), on,
                              len(s.sharpen), depth, push_need)
            if isinstance(r, str):
                failure = (f"step at coordinate {s.coord + 1} gap {s.gap}: neither boosts nor sharpening "
                           f"layers pad it to {depth} layers: {r}")
                break
            padded.append(r)
        if failure is None:
            break
        if depth >= tuning.MAX_SHARPEN:
            raise ConstructionError(failure)
        depth += 1
    for i, s in enumerate(steps):
        pre, on = step_pre[i]
        layers, extra = padded[i][0], padded[i][-1]
        if layers is not None:
            _, s.s, s.kappa, on, (pre, s.k0, s.K), s.boost_a, s.boost_c = padded[i][1]
            s.sharpen, s.lift = tuple(layers), ()
            pre = kit.add(kit.mul(s.boost_a, kit.T(pre)), s.boost_c)
        for a, c in extra:
            pre = kit.add(kit.mul(a, kit.T(pre)), c)
        on_t = kit.T(pre[on])
        tv = on_t - L
        s.on_min, s.on_max, s.on_sign = float(np.abs(tv).min()), float(np.abs(tv).max()), float(np.sign(tv)[0])
        s.on_lo, s.on_hi, s.reboost = float(on_t.min()), float(on_t.max()), tuple(s.lift) + tuple(extra)
        step_pre[i] = pre
    step_val = [kit.T(p) for p in step_pre]
    step_pre = None          # (steps x values floats: only step_val is read from here on)

    def gating_steps(zi):
        """Indices of the steps that are dead exactly at point zi (and at least one on elsewhere)."""
        out = []
        for j in range(d):
            m = coord_idx[j][zi]
            if m > 0:
                out.append(step_of[(j, m, False)])          # on iff x_j <= value below z_j
            if m < len(coord_vals[j]) - 1:
                out.append(step_of[(j, m + 1, True)])       # on iff x_j >= value above z_j
        return out

    def step_on_X(si):
        s = steps[si]
        return step_val[si][coord_idx[s.coord]]

    if gating == "auto":
        gating = "slices" if d >= 2 and N > tuning.EXACT_GATE_POINTS else "points"
    if gating == "slices" and d >= 2 and N > 1:
        ctx = _SlicedCtx(kit, st, F, X, steps, step_val, coord_vals, coord_idx, step_of)
    else:
        ctx = _Ctx(kit, st, F, X, steps, [step_on_X(i) for i in range(len(steps))], gating_steps)
    step_val = None          # the gates read the steps' values from ctx now
    h_max = float(np.max(np.abs(hv))) if N else 0.0
    consts = _Constants(F, cz, ct)
    C = consts.absorber(h_max, kit.dT)
    # the number of layers after the gates: each extra pass layer lets a gradient branch carry a larger
    # ratio g*/h* (its forward value at z is re-centred once more); every branch gets the same depth
    quarter = math.ldexp(1.0, math.frexp(C)[1] - 1 - F.M - 2)
    # every branch must span the same layers: build each with at least the depth reached so far, and
    # rebuild (or pad) the ones that came out shorter than the final depth.  The points are searched in
    # chunks (``chunks.point_chunks``), side by side in worker processes where there are cores: each
    # chunk's search starts from one layer, and the chunks agree on the depth between the rounds.
    # Sliced gating searches each branch from the fewest layers (``tuning.SHORTEST_FIRST_SLICED``) only
    # where T(0) != 0 (the activations with T(0) = 0 built their branches faster from the depth
    # reached so far: relu on the float8_e5m2 box 108 s from one layer up against 61 s, elu, gelu, swish,
    # tanh on float8_e4m3 20-30 % slower; sigmoid on float8_e4m3 331 s -> 85 s)
    sliced = isinstance(ctx, _SlicedCtx)
    shortest = (tuning.SHORTEST_FIRST_SLICED and sliced and ctx.small_format
                and float(kit.T(0.0)) != 0)

    def rounds(chunk, report):
        """The chunk's branches: its gradient branches (round 1, then rebuilt or padded to the depth of
        every chunk's deepest, round 2), then, once every chunk has counted its gradient gates per point,
        its points' value branches at the final depth."""
        grad_part, n_cur = [], 1
        if shortest:
            ctx.depth_hint, ctx.depth_last = {1: 0}, 1        # (``_Ctx.depth_hint``)
        for zi, j in chunk.pairs():
            report()
            if gv[zi, j] != 0:
                brs = _gradient_branches(ctx, zi, j, float(hv[zi]), float(gv[zi, j]), h_max, C, max_post,
                                         1 if shortest else n_cur)
                n_cur = max(n_cur, len(brs[0].post))
                grad_part += brs
        n_cur = (yield {"depth": n_cur})["depth"]
        _to_depth(ctx, grad_part, n_cur, shortest, h_max, C, quarter)
        gates = {}
        for br in grad_part:
            gates[br.zi] = gates.get(br.zi, 0) + 1
        every = yield {"depth": max([len(br.post) for br in grad_part] + [1]), "gates": gates}
        n_final = every["depth"]
        for br in grad_part:
            ctx.pad_gradient(br, n_final, h_max, quarter)
        # the value gates share each point's gating steps with its gradient gates, of every chunk
        # (``gradient_at``, read where gating is per point, holds this chunk's branches: all of its
        # points' there, since such chunks split the points, not the coordinates)
        ctx.gradient_gates = every["gates"]
        for br in grad_part:
            ctx.gradient_at.setdefault(br.zi, []).append(br)
        values_part = []
        for zi in chunk.points:
            report()
            if fv[zi] != 0:
                values_part += ctx.value_branches(zi, fv[zi], h_max, n_final, float(hv[zi]))
        # sliced gating: the indicators this chunk built (assembly reads them; a worker's are its own)
        return grad_part, values_part, getattr(ctx, "_indicators", None)

    total = N * d + N
    parts = run_rounds(point_chunks(N, d, ctx.small_format, by_coordinate=sliced), rounds, _agree, jobs,
                       (lambda done: progress(done, total)) if progress else None)
    # point by point, each point's coordinates in order, as one chunk of every point would list them
    grad_part = sorted((br for p in parts for br in p[0]), key=lambda br: (br.zi, br.coord, br.part))
    values_part = [br for p in parts for br in p[1]]
    if sliced:
        for p in parts:
            for key, gate in p[2].items():
                ctx._indicators.setdefault(key, gate)
    with gc_paused():       # (sigmoid on a 64 x 64 float8_e4m3 grid: 0.41-0.52 s with collections, 0.19 s without)
        net = _assemble(kit, st, F, d, steps, values_part, grad_part, consts, C, activation, implementation,
                        ctx if sliced else None)
    claim = Claim(5, X, fv, hv, gv)
    ctx = None               # its per-point arrays (steps x points) and caches are not needed to verify
    if verify_result:
        # the sparse interpreter (the same numbers, computed on the neurons live at each point) where it
        # applies; the dense one otherwise.  Small networks on 8-bit formats (the d = 1 float8 boxes):
        # the dense one by numpy, which costs less there (0.1-0.2 s) than loading the compiled kernels
        if F.bits <= 8 and N * net.nonzero_parameters <= tuning.NUMPY_VERIFY_WORK:
            from ..network import numpy_path
            with numpy_path():
                res = _verify(net, claim, method="fast")
        else:
            res = _verify(net, claim, method="sparse")
        if not res.ok:
            raise ConstructionError("the constructed network failed exact verification: " + res.summary())
    return net, claim


def _to_depth(ctx, grad_part, n_cur, shortest, h_max, C, quarter):
    """Round 2 of a chunk: each gradient branch shorter than n_cur padded with relays (the shortest-first
    search), else rebuilt at n_cur with the gate targets it was found with, else left for pad_gradient."""
    for i, br in enumerate(grad_part):
        if shortest and len(br.post) < n_cur:
            # padded with relays on a copy of its layers (the branch stays as it was where padding fails)
            post, ow = br.post, br.out_weight
            br.post = list(post)
            try:
                ctx.pad_gradient(br, n_cur, h_max, quarter)
                continue
            except ConstructionError:
                br.post, br.out_weight = post, ow
        if len(br.post) < n_cur:
            # with the gate targets the branch was found with, and a budget (SearchGaveUp: padded too)
            ctx.near_one = getattr(br, "near_one", False)
            ctx.transfer_budget = ctx.budget()
            try:
                grad_part[i] = ctx.gradient_branch(br.zi, br.coord, br.y, br.g, h_max, C, n_cur)
                grad_part[i].part = br.part
            except ConstructionError:
                pass                                   # pad_gradient appends exact relays instead
            finally:
                ctx.near_one, ctx.transfer_budget = False, None


def _agree(reports):
    """What the chunks agree on between rounds: the deepest branch of any chunk, and each point's number
    of gradient gates over every chunk."""
    out = {"depth": max(r["depth"] for r in reports)}
    if "gates" in reports[0]:
        gates = {}
        for r in reports:
            for zi, k in r["gates"].items():
                gates[zi] = gates.get(zi, 0) + k
        out["gates"] = gates
    return out
