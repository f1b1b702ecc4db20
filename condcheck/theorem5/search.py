"""The per-point search for gradient branches: post-gate depths, retries (joins, gates near 1,
offset gates, zero ends) and the transfer budget.
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.kit import enumerated, in_format
from ..formats import Format
from . import tuning
from .errors import ConstructionError, SearchGaveUp
from .sets import log2_abs


def _post_limit(F: Format, y: float, g: float, max_post) -> int:
    """The most layers after a gradient gate to try: max_post if given, else enough for the ratio g/y.

    A blocker layer's forward value is at least about an ulp of its a v (relu: T(p) = p), so one layer
    separates its backward gain from its forward value by about 2^(M+1) only; a ratio |g/y| = 2^r needs
    about r / (M+1) layers beyond the first (measured: relu on the float8_e5m2 box with g*/h* = 2^28.5
    needs 10).  At least 5, at most 40.

    Why relu needs these layers and the others do not: relu~'(0) = 0, so relu has no live zero, and a
    blocker's forward value at its point is a nonzero RN(a v + c) of at least about 2^-(M+1) |a v| (the
    cancellation leaves an ulp of a v): each layer widens the ratio of backward gain to forward value by
    at most about 2^(M+1).  tanh, elu, gelu and swish have T(0) = 0 with T'(0) = 1 or 1/2: a blocker at
    p = 0 passes the gain a T'(0) with forward value exactly 0, limited only by Omega, so one or two
    layers carry any ratio.  Measured on float64 box samples (random targets over all values): max
    log2 |g*/h*| = 1291 on 16 points gives depth 22, 1882 on 256 points depth 32: about 59 bits per
    extra layer between the two (M + 1 = 53, and the states a layer can reach), the rest carried by
    the output weight, the gate and the fixed factors.  The 40-layer cap covers float64's whole range (log2 |g/y| <= 2098).
    """
    if max_post is not None:
        return max_post
    r = log2_abs(g) - log2_abs(y) if y and g else 0.0
    return int(min(40, max(5, math.ceil(max(r, 0.0) / (F.M + 1)) + 2)))


def search_gradient_branches(ctx, zi, j, y, g, h_max, C, max_post, n_min=1):
    """The branches that carry g*_j at point zi: one, or k = 2, 4, ... carrying g/k each
    (``_gradient_branches_search``), with a budget of TRANSFER_BUDGET transfer searches for this attempt
    (each retry it makes gets its own) on formats with many values, where one transfer search costs up
    to a second (on the small formats it costs milliseconds, and a search may need thousands: relu on an
    8 x 8 float8_e5m2 grid, point 3, g*/h* = 2^16.8)."""
    saved = ctx.transfer_budget
    ctx.transfer_budget = ctx.budget()
    try:
        return _gradient_branches_search(ctx, zi, j, y, g, h_max, C, max_post, n_min)
    except SearchGaveUp:
        # every budgeted attempt (and retry) gave up: the whole search once more without a budget, so that
        # no point that an unlimited search builds is lost to the budget (only at the top level)
        if not tuning.UNBUDGETED_LAST or ctx.unbudgeted or ctx.retrying:
            raise
        ctx.unbudgeted = True
        try:
            return search_gradient_branches(ctx, zi, j, y, g, h_max, C, max_post, n_min)
        finally:
            ctx.unbudgeted = False
    finally:
        ctx.transfer_budget = saved


def _gradient_branches_search(ctx, zi, j, y, g, h_max, C, max_post, n_min=1):
    """The branches that carry g*_j at point zi: one, or k = 2, 4, ... carrying g/k each.

    The backward value arriving at the source's output is g / (w_g T'(s0)); with a small |T'| (sigmoid:
    at most 1/4) and |w_g| <= Omega / max|x_j|, it can exceed Omega for a large |g|.  k branches with
    g/k each then meet at x_j's sum: 0 (+) ... (+) g/k (+) ... (+) g/k, where every other first-layer
    neuron contributes exactly 0 at the point; k is used only when that left-to-right rounded sum of k
    copies of g/k is exactly g (always for k = 2; for k = 4, 3g/4 must be a value too).  The fewest
    branches that can fit come first, then twice as many.
    """
    F, kit = ctx.F, ctx.kit

    def source_gain():
        xmax = float(np.max(np.abs(ctx.coord_values(j))))
        w_max = math.ldexp(1.0, min(math.floor(log2_abs(F.max_float) - log2_abs(xmax)), F.e_max)) if xmax else F.max_float
        return w_max * float(np.max(np.abs(ctx.pass_d)))
    gain = ctx.cached(("source_gain", j), source_gain)       # a function of coordinate j's values only
    first = next((k for k in (1, 2, 4, 8) if abs(g) / k / gain <= F.max_float), 16)
    err = ConstructionError(f"point {zi + 1}: the gradient {g!r} needs more than {2 * first} branches")

    def sums_to_g(part, k):
        acc = part
        for _ in range(k - 1):
            acc = kit.add(acc, part)
        return acc == g

    try:
        for parts in ((1, 2) if first == 1 else (first, 2 * first)):
            part = g / parts
            if not in_format(F, part):
                break
            if not sums_to_g(part, parts):
                continue
            top = max(n_min, _post_limit(F, y, part, max_post))
            if not ctx.small_format:
                # formats with many values: each (source, pass, gate) tries every depth up to the limit
                # before the next is tried (a full sweep per depth costs ~150 transfers); then the depths
                # below n_min (the caller pads a shorter branch with exact relays: a branch whose ratio
                # shrinks can not take many blocker layers, each of which needs a weight that crosses the tail)
                for lo, hi in ((n_min, top), (1, n_min - 1)):
                    if lo > hi:
                        continue
                    try:
                        return _parts([ctx.gradient_branch(zi, j, y, part, h_max, C, lo, hi) for _ in range(parts)])
                    except SearchGaveUp:
                        raise
                    except ConstructionError as e:
                        err = e
                continue
            # the fewest layers that work from the depth reached so far, then fewer (the caller rebuilds or
            # pads a shorter branch with exact relays; sigmoid on a 64 x 64 float8_e4m3 grid: a point whose
            # transfer fits only without the blocker layers the branches before it needed)
            order = list(range(n_min, top + 1)) + list(range(1, min(n_min, top + 1)))
            hint = ctx.depth_hint
            if hint is not None and n_min == 1:
                # sliced search from the fewest layers (SHORTEST_FIRST_SLICED): the last branch's depth
                # first (neighbouring points mostly need the same), then the depth most branches built so
                # far have, then from one layer upwards; so no branch is longer than both those depths and
                # its own fewest layers, and the final depth is the largest of the points' fewest.  relu on
                # the float8_e4m3 box: 32 s with the last depth first, 77 s from one layer up
                first = [min(ctx.depth_last, top), min(max(hint, key=lambda n: (hint[n], -n)), top)]
                order = list(dict.fromkeys(first + list(range(1, top + 1))))
            for n_post in order:
                try:
                    brs = _parts([ctx.gradient_branch(zi, j, y, part, h_max, C, n_post) for _ in range(parts)])
                    if hint is not None:
                        hint[n_post] = hint.get(n_post, 0) + 1
                        ctx.depth_last = n_post
                    return brs
                except SearchGaveUp:
                    raise
                except ConstructionError as e:
                    err = e
    except SearchGaveUp as e:
        # the budget is spent: the retries below (each with a budget of its own), then this error
        err = SearchGaveUp(f"point {zi + 1} {ctx.X[zi].tolist()}, coordinate {j + 1}: the gradient branch search "
                           f"gave up after {tuning.TRANSFER_BUDGET} transfer searches (h* = {y!r}, g* = {g!r}; {e})")
    # every chain the greedy transfer found fell short: once more with a wider search, only here, so that
    # every branch found before stays as it was.  8-bit formats: the beam over the blocker layers.
    # Enumerated formats with many values: first layers aimed at what the last layer can carry, with a
    # last layer joined from both ends of the backward chain (``Context._last_join``; sigmoid on 256 float16
    # box points, point 162: h* = -2^-24, g* = 777.5, g*/h* = 2^33.6, gates with T' = 1/4)
    def again_with(flag):
        """This search once more with ctx.<flag> set, or None when it fails too."""
        setattr(ctx, flag, True)
        try:
            return search_gradient_branches(ctx, zi, j, y, g, h_max, C, max_post, n_min)
        except ConstructionError:
            return None
        finally:
            setattr(ctx, flag, False)

    # formats with many values, a ratio |g*/h*| below 1: gates near 1 before the join (the join aims the
    # last layer at large ratios; the default gates, on the smallest values, can not shrink the chain: relu
    # on 4,096 bfloat16 box points spent ~125 CPU s on each of a few such points in a join that gave up)
    near_first = _near_one_first(ctx, y, g)
    if near_first and ctx.NEAR_ONE and not ctx.retrying:
        r = again_with("near_one")
        if r is not None:
            return r
    retry = "beam" if ctx.small_format else "join" if ctx.nonzero_values is not None else None
    if retry and not getattr(ctx, retry) and not (near_first and ctx.near_one):
        r = again_with(retry)
        if r is not None:
            return r
    # tabulated formats whose dead value L is not 0, where even the beam failed: the zero end (see
    # ``Context._zero_end``), greedy then beam, only here, so every branch found before stays as it was
    if ctx.tables is not None and ctx.small_format and ctx.st.L != 0 and not (ctx.zero_end or ctx.beam):
        r = again_with("zero_end")
        if r is not None:
            return r
    # 8-bit formats where all of that failed at the gate: gates with per-step weight sizes
    # (``Context._offset_rows``; mish on float8_e4m3b11fnuz), only here
    if (ctx.small_format and not (ctx.offset_gates or ctx.near_one or ctx.beam or ctx.zero_end)
            and "no gate" in str(err)):
        r = again_with("offset_gates")
        if r is not None:
            return r
    # every search above failed: gradient gates on the targets whose value is nearest 1 (``_gradient_targets``),
    # only here, so every branch found before stays as it was.  The gates' usual first targets are the
    # smallest values (relu on bfloat16: the smallest subnormal 2^-133), from which the blocker layers
    # can not shrink the chain by a ratio g*/h* = 2^-80 without their forward values underflowing
    if ctx.NEAR_ONE and not (near_first or ctx.retrying):
        r = again_with("near_one")
        if r is not None:
            return r
    # the 16-bit formats where every search above failed at the gate: per-step weight sizes too, last, so
    # every branch found before stays as it was.  gelu on the float16 box, point 17349 (x = -0.0662): the
    # down-step's on values reach 65,504 (its weight at most 1, push 13.9), and the shared sizes tie the
    # up-step's weight to 2^-12 (push 40832 x 2^-12 = 10), too little against the pass (0.58 at the point,
    # up to 1.40 above it, weight 16-64); the up-step at weight 1.6035 pushes 65,472 (``_offset_rows``)
    if (not ctx.small_format and enumerated(ctx.F) and not ctx.retrying and "no gate" in str(err)):
        r = again_with("offset_gates")
        if r is not None:
            return r
        # and where the gates of those sizes weigh a step so much that no backward value reaching g* fits
        # below Omega / (share beta): every size, the smallest largest weight first (``_least_rows``; swish
        # on the float16 box, point 35329: beta 36.28 leaves 601 at the gate where 821 is needed), last
        r = again_with("least_gates")
        if r is not None:
            return r
    raise err


def _near_one_first(ctx, y, g) -> bool:
    """Whether a gradient search that gave up retries with gates near 1 before the join: on formats with
    many values (not small_format), where the chain must shrink (|g*| < |h*|).  A gate's value Gz is the
    forward value the blocker layers start from; the default gate targets put it on the smallest values
    (relu on bfloat16: 2^-133), from which no blocker has a gain below 1, so a ratio far below 1 finds no
    last layer whatever the join adds to it, while gates near 1 leave room both ways."""
    return (not ctx.small_format and ctx.nonzero_values is not None and y != 0 and g != 0
            and abs(g) < abs(y))


def _parts(branches):
    """Number the equal branches of a split gradient (they must stay separate neurons: their
    contributions meet only in x_j's sum)."""
    for k, br in enumerate(branches):
        br.part = k
    return branches
