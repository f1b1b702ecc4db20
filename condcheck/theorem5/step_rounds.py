"""The steps of a construction, built in rounds: each chunk of the domain builds the steps its points
read, and the chunks agree on the layers every step spans.

A step (key (coordinate j, gap, up)) is a neuron that is on at the coordinate values on one side of a
gap and dead at the others (``steps.Step``).  Point z is gated by the steps next to its value in each
coordinate (``gating_keys``): a step is read only by the points whose coordinate value is next to its
gap on its dead side.  So a chunk of points needs only the steps of ``chunk_keys``, and the chunks
together need every step (every coordinate value is some point's).

Why the steps do not depend on the chunks: a step's first build is a function of its key (the chosen
separator, its split, sharpening and lift; the kit's caches hold pure functions), and the padding of a
step to ``depth`` layers is a function of the step and ``depth``.  ``depth`` starts at the most layers
any step needs and grows by one while some step can not be padded to it; the chunks agree on both
(``agree_steps``), so each step comes out as one process building every step would build it.
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import is_neg_zero
from ..op_tables import op_tables
from ..separators import separator_chooser
from . import tuning
from .boosts import boost, lifted_boost, padded_split, reboosts, sharpened_split, step_split
from .errors import ConstructionError
from .gates import gate_reach
from .step_extremes import Certifying, NotCertified, SeparatorRows
from .steps import Step, chain_index_maps


def all_keys(coord_vals) -> list:
    """Every step's key (j, gap, up), in the order of the network's step neurons: coordinate by
    coordinate, gap by gap, the "on above the gap" step first."""
    return [(j, gap, up) for j, vals in enumerate(coord_vals) if len(vals) >= 2
            for gap in range(1, len(vals)) for up in (True, False)]


def gating_keys(coord_vals, coord_idx, zi) -> list:
    """The keys of the steps that are dead exactly at point zi (and at least one on elsewhere): per
    coordinate, the step on at the values below z_j (if any) and the step on at the values above it."""
    out = []
    for j in range(len(coord_vals)):
        m = int(coord_idx[j][zi])
        if m > 0:
            out.append((j, m, False))           # on iff x_j <= value below z_j
        if m < len(coord_vals[j]) - 1:
            out.append((j, m + 1, True))        # on iff x_j >= value above z_j
    return out


def chunk_keys(coord_vals, coord_idx, points) -> list:
    """The keys of the steps that gate the points, in ``all_keys`` order."""
    want = {k for zi in points for k in gating_keys(coord_vals, coord_idx, zi)}
    return [k for k in all_keys(coord_vals) if k in want]


def step_rounds(kit, st, coord_vals, keys, push_need, compact=False):
    """Build the steps of ``keys`` (a generator of rounds, ``chunks.run_rounds``; combine the reports with
    ``agree_steps``).  Returns ({key: Step}, {key: the step's values T on coordinate key[0]'s values}).

    The separators are chosen per coordinate for the range of gaps the keys span (``separator_chooser``:
    the same choice as over every gap).  ``compact`` (16-bit formats, domains whose gates read the steps
    at their own points only): each step built on four values where they decide it (``step_extremes``),
    and no values returned (None each)."""
    choosers = {}
    for j in sorted({key[0] for key in keys}):
        gaps = [key[1] for key in keys if key[0] == j]
        choosers[j] = separator_chooser(kit, coord_vals[j], st, gaps=(min(gaps), max(gaps)))
    four = set()            # the keys built on four values (compact)
    if compact:
        built = _first_builds_four(kit, st, coord_vals, choosers, keys, push_need, four)
    else:
        built = _first_builds(kit, st, coord_vals, choosers, keys, push_need)

    def whole(key):
        """The key built again on its whole row (where four values did not decide a later stage)."""
        four.discard(key)
        built[key] = _first_build(kit, st, coord_vals[key[0]], choosers[key[0]], key, push_need)
        return built[key]

    def on_four(key, stage):
        """stage(kit, s, pre, on) of the key: on its four values with the certifying kit where it was
        built on them, else (or where they do not decide it) on its whole row."""
        if key in four:
            try:
                return stage(Certifying(kit, st), *built[key])
            except NotCertified:
                whole(key)
        return stage(kit, *built[key])
    # every step spans the same layers: a step with fewer sharpening layers than the deepest is boosted
    # again after its boost (each boost keeps L dead and its on values on one side of L, so the step
    # stays a step), else sharpened to the full depth (one layer deeper for all steps when some step can
    # not be padded: a longer greedy chain can split where a shorter one did not); without sharpening
    # (every format but the narrow 8-bit ones) nothing changes.  With wide boosts (a retry for large
    # upstream values, see _boost_weights) every step is boosted twice: one boost can leave an on value
    # near L far from Omega (swish~ on float8_e4m3: the step's on value -0.23 boosts to at most 48, the
    # second boost takes it to 224)
    depth = (yield {"step_depth": max([len(s.sharpen) + len(s.lift) for s, _, _ in built.values()]
                                      + [1 if kit.wide_boosts else 0])})["depth"]
    while True:
        padded, failure = {}, None

        def padding_boosts(k, s, pre, on):
            extra = reboosts(k, st, pre, on, depth - len(s.sharpen) - len(s.lift))
            if extra is None and k is not kit:
                raise NotCertified("the step's boosts do not pad it (the whole row may sharpen it)")
            return extra
        for key in list(built):
            extra = on_four(key, padding_boosts)
            if extra is not None:
                padded[key] = (None, extra)
                continue
            s, pre, on = built[key]
            r = padded_split(kit, st, kit.T_row([(s.w, coord_vals[s.coord])], s.b), on,
                              len(s.sharpen), depth, push_need)
            if isinstance(r, str):
                failure = (f"step at coordinate {s.coord + 1} gap {s.gap}: neither boosts nor sharpening "
                           f"layers pad it to {depth} layers: {r}")
                break
            padded[key] = r
        agreed = yield {"step_failure": failure, "depth": depth}
        if agreed.get("error"):
            raise ConstructionError(agreed["error"])
        if agreed.get("done"):
            break
        depth = agreed["depth"]
    steps, values = {}, {}
    for key in list(built):
        def finish(k, s, pre, on):
            """The step's fields read from its on values after its padding (and its values, unless compact)."""
            layers, extra = padded[key][0], padded[key][-1]
            if layers is not None:
                _, s.s, s.kappa, on, (pre, s.k0, s.K), s.boost_a, s.boost_c = padded[key][1]
                s.sharpen, s.lift = tuple(layers), ()
                pre = k.add(k.mul(s.boost_a, k.T(pre)), s.boost_c)
            for a, c in extra:
                pre = k.add(k.mul(a, k.T(pre)), c)
            on_t = k.T(pre[on])
            tv = on_t - st.L
            fields = (float(np.abs(tv).min()), float(np.abs(tv).max()), float(np.sign(tv)[0]),
                      float(on_t.min()), float(on_t.max()), tuple(s.lift) + tuple(extra))
            return s, fields, None if compact else kit.T(pre)
        if key in four:
            try:
                s, fields, values[key] = finish(Certifying(kit, st), *built[key])
            except NotCertified:
                # (its padding again, on the whole row: the same boosts where the four values found them)
                s, pre, on = whole(key)
                extra = reboosts(kit, st, pre, on, depth - len(s.sharpen) - len(s.lift))
                if extra is None:
                    raise ConstructionError(f"step at coordinate {s.coord + 1} gap {s.gap}: its boosts do not "
                                            f"pad it to {depth} layers") from None
                padded[key] = (None, extra)
                s, fields, values[key] = finish(kit, *built[key])
        else:
            s, fields, values[key] = finish(kit, *built[key])
        s.on_min, s.on_max, s.on_sign, s.on_lo, s.on_hi, s.reboost = fields
        steps[key] = s
    return steps, values


def agree_steps(reports) -> dict:
    """What the chunks agree on in ``step_rounds``: the most layers any step needs, then, after each
    padding round, whether every step was padded (done), else one layer more for all, or (at
    tuning.MAX_SHARPEN layers) the first failure in chunk order as the error."""
    if "step_depth" in reports[0]:
        return {"depth": max(r["step_depth"] for r in reports)}
    failure = next((r["step_failure"] for r in reports if r["step_failure"]), None)
    if failure is None:
        return {"done": True}
    depth = reports[0]["depth"]
    if depth >= tuning.MAX_SHARPEN:
        return {"error": failure}
    return {"depth": depth + 1}


def _first_build(kit, st, vals, choose, key, push_need):
    """(Step, its boosted pre-activations on the coordinate values, its on side) of a step's first build:
    the chosen separator, split by a quantizer chain and boosted (sharpening layers first where the
    separator does not split, on the tabulated formats; a lift where the boost leaves a gate too little
    push)."""
    j, gap, up = key
    F = kit.fmt
    ch = choose(gap, up)
    if ch is None:
        raise ConstructionError(
            f"distinguishability fails: no neuron T(w x_{j + 1} + b) separates coordinate values "
            f"<= {float(vals[gap - 1])!r} from >= {float(vals[gap])!r} monotonically")
    w, b, s0, kappa0 = ch
    n = kit.T_row([(w, vals)], b)
    best, why = step_split(kit, st, n, s0, kappa0, push_need)
    sharpen = ()
    if best is None and op_tables(F) is not None:
        # only where the separator does not split: sharpening layers first
        on_side = np.arange(len(vals)) >= gap if up else np.arange(len(vals)) < gap
        layers, n2, best2 = sharpened_split(kit, st, n, on_side, push_need)
        if layers is not None:
            sharpen, n, best = tuple(layers), n2, best2
    if best is None:
        raise ConstructionError(f"step at coordinate {j + 1} gap {gap}: {why}")
    _, s, kappa, on, (pre, k0, K), ba, bc = best
    lift = lifted_boost(kit, st, pre, on, 2 * push_need) if best[0] < 2 * push_need else None
    lift = lift if lift is not None and lift[2] > best[0] else None
    if lift is not None:
        (ba, bc), lift = lift[0], (lift[1],)
    pre = kit.add(kit.mul(ba, kit.T(pre)), bc)
    for a2, c2 in lift or ():
        pre = kit.add(kit.mul(a2, kit.T(pre)), c2)
    return (Step(j, gap, up, w, b, s, kappa, k0, K, boost_a=ba, boost_c=bc, sharpen=sharpen, lift=lift or ()),
            pre, on)


def _first_build_four(ck, st, rows, choose, key, push_need):
    """``_first_build`` on the four values of the key's separator row (``step_extremes``), with the
    certifying kit ck: (Step, its four boosted pre-activations, their on side), or NotCertified /
    ConstructionError where the whole row must decide."""
    j, gap, up = key
    ch = choose(gap, up)
    if ch is None or ck.tables is not None:         # (sharpening and lifts read whole rows on the tables)
        raise NotCertified("no separator, or a tabulated format")
    w, b, s0, kappa0 = ch
    rep = rows.representatives(w, b, gap, up)
    if rep is None:
        raise NotCertified("the separator row holds -0")
    n4, side = rep

    def check_on(on):
        if not np.array_equal(on, side):
            raise NotCertified("the step row's on side is not the key's")
    best, _ = step_split(ck, st, n4, s0, kappa0, push_need, check_on=check_on)
    if best is None:
        raise NotCertified("no split")
    _, s, kappa, on, (pre, k0, K), ba, bc = best
    pre = ck.add(ck.mul(ba, ck.T(pre)), bc)
    return Step(j, gap, up, w, b, s, kappa, k0, K, boost_a=ba, boost_c=bc), pre, on


def _first_builds_four(kit, st, coord_vals, choosers, keys, push_need, four) -> dict:
    """``_first_builds`` of the keys, each on four values where they decide it (adding the key to four),
    else on its whole row (which raises where the step can not be built, in key order)."""
    ck = Certifying(kit, st)
    rows = {j: SeparatorRows(kit, coord_vals[j]) for j in sorted({key[0] for key in keys})}
    out = {}
    for key in keys:
        try:
            out[key] = _first_build_four(ck, st, rows[key[0]], choosers[key[0]], key, push_need)
            four.add(key)
        except (NotCertified, ConstructionError):
            out[key] = _first_build(kit, st, coord_vals[key[0]], choosers[key[0]], key, push_need)
    return out


def _first_builds(kit, st, coord_vals, choosers, keys, push_need) -> dict:
    """{key: ``_first_build``} for every key, in key order: on the index tables, the steps of each
    coordinate whose separator splits at scale 1 with a boost that reaches push_need all at once
    (``_first_builds_indexed``), the others one by one (a key that raises, raises there, in key order).
    Both give the same numbers (tests/test_theorem5_step_rounds.py compares them on every key of the
    float8 boxes): the same sums and products, looked up; relu on the float8_e5m2 box built its 448
    steps in 0.54 s one by one."""
    fast = {}
    if kit.tables is not None:
        for j in sorted({key[0] for key in keys}):
            fast.update(_first_builds_indexed(kit, st, coord_vals[j], choosers[j],
                                              [key for key in keys if key[0] == j], push_need))
    return {key: fast[key] if key in fast else
            _first_build(kit, st, coord_vals[key[0]], choosers[key[0]], key, push_need) for key in keys}


def _first_builds_indexed(kit, st, vals, choose, keys, push_need) -> dict:
    """``_first_build`` of the keys (one coordinate, values vals) on the index tables, as rows of one
    array per operation, for the keys whose build takes its common path: the separator (w, b) with its
    split (s, kappa) at scale 1, a quantizer chain, a boost whose gate reach is at least push_need (so
    ``step_split`` stops at scale 1), no sharpening, and no -0 among the scalars (an index has no
    sign of zero; with these, no value the build returns is -0 on the exact path either).  Keys off that
    path are left out (the caller builds them one by one).  Each row follows ``_first_build`` and
    ``quantize`` step by step: the same sums and products in the same order, an overflow anywhere
    sends the key to the one-by-one path (which raises or tries the next scale, as before)."""
    tb, F, L = kit.tables, kit.fmt, st.L
    over = tb.over
    iv = kit.index(vals)
    iz = kit.index(st.z_dead)
    if iv is None or iz is None or (iv == over).any() or is_neg_zero(st.z_dead):
        return {}
    rows, scal = [], []
    for key in keys:
        ch = choose(key[1], key[2])
        if ch is None:
            continue
        w, b, s0, kappa0 = ch
        ix = [kit.index(x) for x in (w, b, s0, kappa0)]
        if any(i is None or i == over for i in ix) or is_neg_zero(b) or is_neg_zero(kappa0):
            continue
        rows.append((key, ch))
        scal.append(ix)
    if not rows:
        return {}
    Ti = kit.T_index()
    W, B, S, KA = (np.array(c, dtype=np.intp)[:, None] for c in zip(*scal))
    # the separator n = T(w x (+) b), then v = s n (+) kappa (``_first_build``, ``step_split``)
    n = Ti[tb.add(tb.mul(W, iv), B)]
    v = tb.add(tb.mul(S, n), KA)
    ok = ~(v == over).any(axis=1) & ~(n == over).any(axis=1)
    vv = tb.value(np.where(v == over, 0, v))
    on = vv > 0
    ok &= on.any(axis=1)
    # quantize: per row k0 from its smallest on value, then the first chain length K (in quantize's
    # order) whose pre-activations split into dead and live states with every on value on one side of L
    vmin = np.where(on, vv, np.inf).min(axis=1)
    k0s = np.array([max(math.frexp(float(m))[1] - 1 + F.M, F.e_min) if ok[r] else 0
                    for r, m in enumerate(vmin)])
    dead_at = st.dead_by_index(tb)                                # (the index over: not dead)
    pre = np.full_like(v, over)
    Ks = np.zeros(len(rows), dtype=int)
    for k0 in np.unique(k0s[ok]).tolist():
        grp = np.flatnonzero(ok & (k0s == k0))
        ks, maps = chain_index_maps(tb, F, k0)
        vg = v[grp]
        chains = maps[:, vg]                                        # (len(ks), rows, values)
        bad = (chains == over).any(axis=2)
        # a chain K = ks[j] exists for a row while no chain up to it overflowed (``quantizer_chains``)
        n_ok = np.where(bad.any(axis=0), np.argmax(bad, axis=0), len(ks)) if len(ks) else np.zeros(len(grp), int)
        todo = np.ones(len(grp), bool)
        on_g = on[grp]
        for K in list(range(F.e_max - 1, k0 - 1, -1)) + [k0 - 1, F.e_max]:
            if not todo.any():
                break
            if K == k0 - 1:
                ch, has = vg, todo.copy()
            elif K in ks:
                jk = ks.index(K)
                ch, has = chains[jk], todo & (jk < n_ok)
            else:
                continue
            p = tb.add_table[ch, iz]
            t = Ti[p]
            has &= ~(p == over).any(axis=1) & ~((t == over) & on_g).any(axis=1)
            dp = dead_at[p]
            split = ~(dp & on_g).any(axis=1) & (dp | on_g).all(axis=1)
            sg = np.sign(tb.value(np.where(on_g, t, 0)) - L)
            sg0 = sg[np.arange(len(grp)), np.argmax(on_g, axis=1)]
            one_side = ~((sg == 0) & on_g).any(axis=1) & ~((sg != sg0[:, None]) & on_g).any(axis=1)
            take = has & split & one_side
            pre[grp[take]] = p[take]
            Ks[grp[take]] = K
            todo &= ~take
        ok[grp[todo]] = False
    out = {}
    Tv, To = kit.by_index(False)           # T at each index: the values kit.T gives
    for r in np.flatnonzero(ok).tolist():
        key, (w, b, s0, kappa0) = rows[r]
        o = on[r]
        try:
            ba, bc = boost(kit, st, Tv[pre[r][o]])
        except ConstructionError:
            continue
        iba, ibc = kit.index(ba), kit.index(bc)
        if iba is None or ibc is None or is_neg_zero(bc):
            continue
        boosted = tb.add(tb.mul(iba, Ti[pre[r]]), ibc)
        if (boosted == over).any() or To[boosted[o]].any():
            continue
        reach = gate_reach(F, st, Tv[boosted[o]])
        if reach < push_need:
            continue
        s, kappa = s0 * 1.0, kappa0 * 1.0                      # (scale 1, as step_split makes them)
        pre_q = tb.value(pre[r])
        lift = lifted_boost(kit, st, pre_q, o, 2 * push_need) if reach < 2 * push_need else None
        lift = lift if lift is not None and lift[2] > reach else None
        if lift is not None:
            continue                                        # (rare: one by one)
        out[key] = (Step(key[0], key[1], key[2], w, b, s, kappa, int(k0s[r]), int(Ks[r]), boost_a=ba, boost_c=bc,
                         sharpen=(), lift=()), tb.value(boosted), o)
    return out

