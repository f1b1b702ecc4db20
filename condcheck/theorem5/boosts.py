"""Layer 3: boosts (T(a U + c) of each step, moving the on value far from L) and, on narrow
8-bit formats, sharpened and padded steps.
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import enumerated, in_format, Kit, near_values
from ..formats import Format
from ..ops import add_array, mul_array
from . import tuning
from .errors import ConstructionError
from .gates import gate_reach
from .states import States
from .steps import quantize


def boost(kit: Kit, st: States, on_vals, low=None):
    """_boost_search, remembered per set of on values (most steps share theirs) and dead-side value."""
    key = (tuple(np.unique(np.asarray(on_vals, float)).tolist()), low)
    if key not in kit.boosts:
        kit.boosts[key] = _boost_search(kit, st, on_vals, low)
    return kit.boosts[key]


def _boost_search(kit: Kit, st: States, on_vals, low=None):
    """(a, c) of the boost B = T(a U + c) of a step U: L -> dead, the on values -> as far from L as possible.

    A step's on value can be close to L (the quantizer chain ends at 2^(e_max-1-M) and the dead tail
    must be reached on the other side, e.g. swish~(-2) = -0.23 on float8_e4m3), and a gate then needs
    a large weight on it, which multiplies the gate's backward value.  The boost re-maps the on values
    far from L (every power-of-two weight and the largest bias that keeps L dead are tried).
    ``low``: U's value on the dead side when it is not L (a boost after a *lift*, ``lifted_boost``).
    """
    F, L = kit.fmt, st.L
    low = L if low is None else low
    on = np.unique(np.asarray(on_vals, float))
    sg = float(np.sign(on[0] - low))
    if kit.tables is not None:
        r = _boost_search_indexed(kit, st, on, low, sg)
        if r is not NotImplemented:
            return r
    G = F.values() if enumerated(F) else None
    best = None
    for a in _boost_weights(F, sg, kit.wide_boosts):
        m_on, o1 = mul_array(np.full_like(on, a), on, F)
        m_dead, o2 = mul_array(np.array([a]), np.array([low]), F)
        if o1.any() or o2.any():
            continue
        # the biases tried: every value, or (large formats) the values within a few ulps of z_d - a L,
        # where the largest bias keeping L dead lies (RN is monotone)
        cand = G if G is not None else np.union1d(near_values(F, np.array([st.z_dead - m_dead[0]]), 3), [0.0])
        q, oq = add_array(np.full_like(cand, m_dead[0]), cand, F)
        ok = ~oq & st.dead(q)
        if not ok.any():
            continue
        c = float(cand[ok].max())                 # the largest bias keeping L dead
        p, op = add_array(m_on, np.full_like(m_on, c), F)
        if op.any() or st.dead(p).any():
            continue
        t, ot = kit.R.value_array(p)
        if ot.any():
            continue
        side = np.sign(t - L)
        if (side == 0).any() or (side != side[0]).any():
            continue
        score = float(np.abs(t - L).min())
        if best is None or score > best[0]:
            best = (score, a, c)
    if best is None:
        raise ConstructionError(f"no boost T(a U + c) keeps the dead value {L!r} dead and moves the step's on "
                                f"values {on.tolist()} away from it")
    return best[1], best[2]


def _boost_search_indexed(kit: Kit, st: States, on, low, sg):
    """``_boost_search`` on the index tables, every weight at once: the same (a, c), or the same error;
    NotImplemented where an input is not a value of the format.

    Why the same: for each weight a (in ``_boost_weights``' order) the same products and sums, looked up
    (an overflow is the index ``over``), the largest bias keeping L dead is the largest index whose sum
    is dead (the values ascend with the indices), T and its overflow by index (sigma~ maps -0 and +0
    alike, and a zero's sign changes no test here: sign(T - L) = 0 either way); the score is the same
    float64 expression, and the first weight with the largest score wins, as the loop's strict > keeps
    it.  tests/test_theorem5_fast_paths.py compares the two on the on-value sets of full boxes."""
    tb, F, L = kit.tables, kit.fmt, st.L
    over = tb.over
    weights = np.array(_boost_weights(F, sg, kit.wide_boosts), float)
    ia, i_on, i_low = kit.index(weights), kit.index(on), kit.index(low)
    if ia is None or i_on is None or i_low is None or (i_on == over).any() or not len(weights):
        return NotImplemented
    ia = ia.astype(np.intp)
    m_on = tb.mul(ia[:, None], i_on[None, :])                        # (weight, on value)
    m_dead = tb.mul_table[ia, i_low]
    valid = ~(m_on == over).any(axis=1) & (m_dead != over)
    dead = st.dead_by_index(tb)                                      # (over: not dead)
    q = tb.add(m_dead[:, None], np.arange(over)[None, :])           # (weight, bias): RN(a L + c)
    ok = dead[q]                                                      # (an overflowing sum is not dead)
    has = ok.any(axis=1)
    c_idx = over - 1 - np.argmax(ok[:, ::-1], axis=1)                 # the largest bias keeping L dead
    valid &= has
    p = tb.add(m_on, c_idx[:, None])
    t_val, t_over = kit.by_index(False)
    valid &= ~(p == over).any(axis=1) & ~t_over[p].any(axis=1) & ~dead[p].any(axis=1)
    t = t_val[np.where(valid[:, None], p, 0)]
    side = np.sign(t - L)
    valid &= ~(side == 0).any(axis=1) & (side == side[:, :1]).all(axis=1)
    if not valid.any():
        raise ConstructionError(f"no boost T(a U + c) keeps the dead value {L!r} dead and moves the step's on "
                                f"values {on.tolist()} away from it")
    score = np.where(valid, np.abs(t - L).min(axis=1), -np.inf)
    i = int(np.argmax(score))
    return float(weights[i]), float(tb.values[c_idx[i]])


def _boost_weights(F: Format, sg: float, wide: bool):
    """The weights a a boost tries, in order: powers of two, largest first, each sign.

    wide (``Kit.wide_boosts``, a retry after a value gate's backward gain overflowed): then every value
    of an enumerated format of at most 8 bits (else the powers of two times 1 + k/8), so that a step's on
    value can be mapped next to Omega rather than to the largest power of two below it.  A value gate
    must be dead wherever one of its gating steps is on, so its weights are at least about its on value
    over the boosts' smallest on value, and at its point the backward value y A a_v reaches the steps
    through them: y f* / on_min, which overflows for |h*| |f*| near Omega^2 / on_min (relu on
    float8_e4m3 at H_sigma: f* = 160 with h* = 208 needs on_min > 139, the powers of two give 128).
    """
    if wide and F.enumerable and F.count_finite() <= 256:
        mags = np.unique(np.abs(F.values()))
        mags = mags[(mags > 0) & np.isfinite(mags)][::-1]
    else:
        ks = range(F.e_max, F.e_min - 1, -1)
        sig = [1 + j / 8 for j in range(8)] if wide else [1.0]
        mags = [x for x in (math.ldexp(m, k) for k in ks for m in sig[::-1]) if in_format(F, x)]
    return [float(sgn * m) for m in mags for sgn in (sg, -sg)]


def step_split(kit: Kit, st: States, n, s0: float, kappa0: float, push_need: float, up: bool = False,
               check_on=None):
    """(best, why): the step row s n + kappa (+) chain (+) z_d of a separator's values n and its boost,
    best = (reach, s, kappa, on, (pre, k0, K), boost a, boost c), or (None, why) when no scale works.

    The separator as it is, else scaled by 2^-k (large separator values can make every chain long
    enough to leave the dead tail overflow); the split is checked exactly.  The first scale whose
    boosted step a gate can use (``gate_reach``) is taken, else the one that comes nearest.
    With ``up`` (sharpened separators), scales 2^k > 1 are tried after 1: the chain lifts the on values
    to at most 2^(e_max - M) (2 on float8_e4m3b11fnuz, while its dead tail starts at -5 to -10), and a
    sharpened separator, whose sides are a few clusters far apart, can be stretched instead.
    ``check_on(on)`` is called with each scale's on side (``step_extremes``: four values stand for a row
    only where their on side is the step's)."""
    F = kit.fmt
    why, best = "no quantizer chain fits (every chain overflows)", None
    ups = [2.0 ** k for k in range(1, F.e_max + 1)] if up else []
    for scale in [1.0] + ups + [2.0 ** -k for k in range(2, 17, 2)]:
        s, kappa = s0 * scale, kappa0 * scale
        if not (in_format(F, s) and in_format(F, kappa)):
            continue
        try:
            v = kit.add(kit.mul(s, n), kappa)
        except ConstructionError:
            continue
        on = v > 0
        if check_on is not None:
            check_on(on)
        found = None
        if on.any():
            found, why = quantize(kit, st, v, on, why)
        if found is None:
            continue
        pre, k0, K = found
        try:
            ba, bc = boost(kit, st, kit.T(pre[on]))
        except ConstructionError as e:
            why = str(e)
            continue
        reach = gate_reach(F, st, kit.T(kit.add(kit.mul(ba, kit.T(pre[on])), bc)))
        if best is None or reach > best[0]:
            best = (reach, s, kappa, on, found, ba, bc)
        if reach >= push_need:
            break
    return best, why


def _orient(n, on):
    """(s, kappa) of a separation: s = +1 when every on value is above every dead value, else -1, and
    kappa = -(the dead value nearest to the on side) * s (as ``choose_steps`` gives them)."""
    if n[on].min() > n[~on].max():
        return 1.0, -float(n[~on].max())
    return -1.0, float(n[~on].min())


def _sharpen_layer(kit: Kit, n, on):
    """(w, b) of the layer T(w n + b) over all of F x F that best separates a step's on values from its
    dead values, or None: the largest gap between the two sides relative to the whole range of values,
    then the largest gap relative to the largest |value| (T values on the format's RN index tables;
    every sum and product exact).  The second key is what the next layer (or the step row) can stretch:
    a weight w keeps w n finite only for |w| <= Omega / max |n|, and |w| <= Omega, so it lifts the gap
    to at most Omega gap / max(|n|, 1) (two clusters at 18 and 20 allow w <= 1.5 and a gap of 3; at 0
    and 2, a gap of 30; at -0.28 and 0.28 only 17).

    Why it helps: on float8_e4m3b11fnuz a first-layer separator can move by at most 7.5 x 1/4 between
    neighbouring box inputs, so its gaps are far below |z_d| (gelu: 5) and the step row lands next to
    the dead tail where no boost can lift it.  A layer T(w n + b) pushes the far values of one side into
    the dead tail or a saturated region (collapsing them) and stretches the gap by up to |w T'|; a few
    such layers leave two well separated clusters, and then the gap itself grows."""
    u, inv = np.unique(n, return_inverse=True)
    u_on = np.zeros(len(u), bool)
    u_on[inv[on]] = True
    # the score is symmetric in the two sides, and many steps meet the same values (the up and down
    # steps of a gap; two clusters after a layer or two): remembered per (values, side of each)
    key = (u.tobytes(), (u_on ^ u_on[0]).tobytes())
    memo = kit.__dict__.setdefault("_sharpen_memo", {})
    if key not in memo:
        v, o = kit.by_index()
        memo[key] = _sharpen_search(kit, kit.tables, np.where(o, np.nan, v), u, u_on)
    return memo[key]


def _sharpen_search(kit: Kit, tb, t_all, u, u_on, chunk: int = 16):
    """``_sharpen_layer``'s search: chunks of weights at once, on the (weight, value, bias) grid of table
    indices; the on values first, so that each side is a slice.  Ties go to the first weight (ascending)
    and then to the first bias."""
    V, nV = tb.values, tb.over
    n_on = int(u_on.sum())
    iu = np.concatenate([tb.index(u[u_on]), tb.index(u[~u_on])])
    ws = np.flatnonzero(V != 0)
    ib = np.arange(nV)
    best = None
    for start in range(0, len(ws), chunk):
        wi = ws[start:start + chunk]
        m = tb.mul_table[wi[:, None], iu[None, :]]                          # (weights, values)
        t = t_all[tb.add_table[m[:, :, None], ib[None, None, :]]]           # (weights, values, biases)
        on_lo, on_hi = t[:, :n_on].min(1), t[:, :n_on].max(1)
        d_lo, d_hi = t[:, n_on:].min(1), t[:, n_on:].max(1)
        gap = np.maximum(on_lo - d_hi, d_lo - on_hi)                     # NaN where some value overflows
        width = np.maximum(on_hi, d_hi) - np.minimum(on_lo, d_lo)
        ok = gap > 0
        if not ok.any():
            continue
        rel = np.where(ok, gap / np.where(ok, width, 1.0), -1.0).ravel()
        top = np.maximum(np.maximum(np.abs(on_lo), np.abs(on_hi)), np.maximum(np.abs(d_lo), np.abs(d_hi)))
        g = np.where(ok, gap / np.maximum(top, 1.0), -1.0).ravel()
        k = int(np.lexsort((-g, -rel))[0])
        key = (float(rel[k]), float(g[k]))
        if best is None or key > best[0]:
            best = (key, float(V[wi[k // nV]]), float(V[k % nV]))
    return None if best is None else best[1:]


def sharpened_split(kit: Kit, st: States, n, on, push_need: float):
    """(layers, n', best): sharpening layers (``_sharpen_layer``, greedily, at most MAX_SHARPEN) after
    which the step row on their output n' splits (``step_split``); (None, None, why) otherwise.
    Used only where the separator itself does not split (8-bit formats with a narrow range, where
    the format's tables make the exhaustive layer search cheap)."""
    layers, why = [], "no sharpening layer separates the step's sides"
    for _ in range(tuning.MAX_SHARPEN):
        wb = _sharpen_layer(kit, n, on)
        if wb is None:
            break
        layers.append(wb)
        n = kit.T_row([(wb[0], n)], wb[1])
        best, why = step_split(kit, st, n, *_orient(n, on), push_need, up=True)
        if best is not None:
            return layers, n, best
    return None, None, why


def padded_split(kit: Kit, st: States, n, on, m: int, depth: int, push_need: float):
    """(layers, best, reboosts) of a step that must span ``depth`` layers before its row and boosts
    and splits after m but whose boost can not be boosted again: k = m + 1 .. depth greedy sharpening
    layers (``_sharpen_layer``), the step row and boost on their output, then depth - k re-boosts; the
    first k that works.  The reason of the last failure (a str) when none does."""
    layers, why = [], "no sharpening layer separates the step's sides"
    for k in range(1, depth + 1):
        wb = _sharpen_layer(kit, n, on)
        if wb is None:
            return why
        layers.append(wb)
        n = kit.T_row([(wb[0], n)], wb[1])
        if k <= m:
            continue
        best, why = step_split(kit, st, n, *_orient(n, on), push_need, up=True)
        if best is None:
            continue
        pre = kit.add(kit.mul(best[5], kit.T(best[4][0])), best[6])
        extra = reboosts(kit, st, pre, on, depth - k)
        if extra is not None:
            return list(layers), best, extra
        why = f"{k} sharpening layers split it, but its boost can not be boosted again"
    return why


def reboosts(kit: Kit, st: States, pre, on, k: int):
    """k boosts (a, c) applied one after another to a boosted step with pre-activations pre (on side
    ``on``), or None when one of them finds no boost."""
    out = []
    for _ in range(k):
        try:
            a, c = boost(kit, st, kit.T(pre[on]))
        except ConstructionError:
            return None
        out.append((a, c))
        pre = kit.add(kit.mul(a, kit.T(pre)), c)
    return out


def lifted_boost(kit: Kit, st: States, pre, on, push_need: float, top: int = 64):
    """(lift, boost, reach) for a step row with pre-activations pre whose plain boost leaves a gate too
    little push (reach < push_need), or None: a *lift* T(a1 U + c1) between the step row U and its boost,
    with any (a1, c1) of the format, then the boost T(a2 Y + c2) that maps the lift's dead-side value
    back into the dead tail.

    Why: the boost keeps L dead, so its bias is at most z_d - a L, and an on value next to L can only be
    moved by about |a| |on - L| - |z_d|: swish~ on float8_e4m3b11fnuz has on values at its minimum -0.28,
    L = 0 and z_d = -13, so no boost lifts them and a gate (|beta| <= Omega = 30) pushes by 8.4 where
    12.5 is needed.  The lift need not keep anything dead (its dead-side input is the dead step row U,
    whose T' = 0 stops every backward value that reaches it), so T(-30 U + 0) maps -0.28 to 8.4 and 0 to
    0, and the boost after it has a wide gap to work with.  The boosted step is dead on the dead side as
    before, so the gates see what they always see.  Only 8-bit formats (exhaustive over F x F on the RN
    tables); the ``top`` lifts with the widest gap relative to max(|value|, 1) get a boost, the largest
    gate reach wins."""
    tb = kit.tables
    if tb is None:
        return None
    F, L = kit.fmt, st.L
    u_on = np.unique(kit.T(pre[on]))
    V = tb.values
    v_all, o_all = kit.by_index()
    t_all = np.where(o_all, np.nan, v_all)
    iu = tb.index(np.append(u_on, L))
    wi = np.flatnonzero(V != 0)
    m = tb.mul_table[wi[:, None], iu[None, :]]                              # (weights, values)
    t = t_all[tb.add_table[m[:, :, None], np.arange(tb.over)[None, None, :]]]   # (weights, values, biases)
    lo = t[:, -1, :]
    d = t[:, :-1, :] - lo[:, None, :]
    one_side = (np.sign(d) == np.sign(d[:, :1, :])).all(1) & (d[:, 0, :] != 0)
    gap = np.abs(d).min(1)
    big = np.maximum(np.abs(t).max(1), 1.0)
    score = np.where(one_side & np.isfinite(gap), gap / big, -1.0).ravel()
    order = np.argsort(-score, kind="stable")[:top]
    best = None
    for k in order:
        if score[k] <= 0:
            break
        a1, c1 = float(V[wi[k // tb.over]]), float(V[k % tb.over])
        y = kit.T(kit.add(kit.mul(a1, kit.T(pre)), c1))
        try:
            a2, c2 = boost(kit, st, y[on], low=float(y[~on][0]))
        except ConstructionError:
            continue
        out = kit.add(kit.mul(a2, y), c2)
        if not (st.dead(out[~on]).all() and not st.dead(out[on]).any()):
            continue
        reach = gate_reach(F, st, kit.T(out[on]))
        if best is None or reach > best[2]:
            best = ((a1, c1), (a2, c2), reach)
        if reach >= push_need:
            break
    return best
