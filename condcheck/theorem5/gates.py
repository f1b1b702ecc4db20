"""Layer 4: gates.  A point's value gate and gradient gates read the boosted gating steps (or,
sliced, the slice neurons) and are live exactly at the point; here their weights, biases and
the exact checks on every domain point (``Gates``, a part of ``Context``).
"""
from __future__ import annotations

import itertools
import math
from functools import cached_property

import numpy as np

from .. import kernels
from ..constructors.kit import in_format, Kit, near_grid, near_values
from ..formats import Format
from ..ops import add_array, mul_array
from . import tuning
from .errors import ConstructionError
from .records import Gate
from .sets import codes16, first_reached, log2_abs
from .states import States


def gate_push_need(st: States) -> float:
    """The least push a gradient gate needs from a gating step that is on: from the dead tail z_d up to
    its smallest strong state (|T'| within a factor 4 of the largest; every gradient gate target is one)."""
    live = (st.z > st.z_dead) & (st.dt != 0)
    if not live.any():
        return 0.0
    d = np.abs(st.dt[live])
    return float(st.z[live][d * 4 >= d.max()].min()) - st.z_dead


def gate_reach(F: Format, st: States, on_t) -> float:
    """The largest push beta |T - L| a gate can take from a boosted step with on values on_t at its
    nearest on point: a power-of-two weight beta must keep beta T finite at every on value.

    Why a step is rescaled for it: a step's on values spread as its separator's do (the quantizer chain
    only lifts the small ones), and the boost T(a U + c) cannot narrow that spread (c <= z_d - a L keeps
    L dead, so for an activation with T(z) ~ z above, like swish, the smallest on value shrinks by
    about |z_d| while the largest grows by a).  A down-step between adjacent float16 values of a
    4,096-point swish sample had on values from 2.82 to 65,152: no power-of-two weight both pushes the
    neighbour 21.6 down into the dead tail (from swish's strong states) and keeps 65,152 beta finite.
    Scaling the separator by 2^-k keeps the small on values at the chain's floor and divides the large
    ones, so the ratio (and with it the gate's reach) improves by 2^k."""
    on_t = np.asarray(on_t, float)
    top = float(np.max(np.abs(on_t)))
    lo = float(np.min(np.abs(on_t - st.L)))
    if top == 0:
        return math.inf
    beta = math.ldexp(1.0, min(math.floor(log2_abs(float(F.max_float)) - log2_abs(top)), F.e_max))   # a value of F
    return beta * lo


def live_pass(st: States):
    """Pass states (T' a nonzero power of two, not dead): the largest |T'| first, up to 1 (a pass should
    not shrink the backward value: every suffix of the chain must keep it a finite value), then the
    smallest |T| (a small forward value is cheap to re-centre and keeps the next product finite)."""
    z, t, dt = st.passes
    m = z > st.z_dead
    z, t, dt = z[m], t[m], dt[m]
    o = np.lexsort((np.abs(t), np.maximum(0.0, -np.log2(np.abs(dt)))))
    return z[o], t[o], dt[o]


def solve_affine(kit: Kit, x_at: float, target: float):
    """c with RN(x_at + c) == target, or None."""
    c = kit.add(target, -x_at)
    c = float(c)
    return c if float(kit.add(x_at, c)) == target else None


class _AtPoint:
    """A gate's pre-activation known at its own point only (``Gates.compact``): pre[zi]."""

    __slots__ = ("zi", "v")

    def __init__(self, zi, v):
        self.zi, self.v = zi, v

    def __getitem__(self, i):
        if i != self.zi:
            raise IndexError(f"the gate's pre-activation is known at point {self.zi + 1} only")
        return self.v


def memo():
    """A dict of each context's own, made at its first use: a search's memo table.  What it holds is a
    pure function of its keys, so it never changes a result, only how often one is computed."""
    return cached_property(lambda self: {})


class Gates:
    """The gate searches of ``Context``: value and gradient gates, live at their point, dead elsewhere.

    ``compact``: the gating steps' rows over the domain are not held (None in ``U_X``; large domains,
    whose gates read them at their own point only, through ``_step_at``)."""

    compact = False
    #: the extra input of a gate (its pass) bounded over the points of each side pattern apart, not over
    #: every other point at once (a tighter bound, the same monotone argument; spread chunks: a pass
    #: row spans both sides of a point, and on the float16 box the gate of a point whose pass takes
    #: large values on one side only was not found)
    side_bounds = False

    # memo tables (``memo``)
    _shift_rows = memo()         # gating set -> (shifts, rows): ``_shifts``
    _pow2_in = memo()            # (sign, exponent) -> whether sign 2^exponent is a value: ``_shifts``
    _offset_shift_rows = memo()  # gating set -> rows: ``_offset_rows``
    _fixed_codes = memo()        # id of a fixed target list -> its code table: ``_ranks_of``
    _fixed_sorted = memo()       # id of a fixed target list -> its sort: ``_sorted_targets``
    _gate_bases = memo()         # (point, gating, rows) -> sums: ``_gate_base`` (``Context.add_steps`` drops it)
    _fixed_ranks = memo()        # id of a fixed target list -> its ranks: ``_gate_indexed``
    _ux_idx = memo()             # step index -> table indices of U_X[i]: ``_ux_index``
    _gating_acc = memo()         # (gating, rows) -> index array: ``_gating_sums_indexed``
    _map_two_memo = memo()       # zs, (v_off, zs) and on-target keys -> index arrays: ``_map_two_indexed``

    def _betas(self, gating, shift_exp):
        out = []
        for i in gating:
            s = self.steps[i]
            e = shift_exp - math.frexp(s.on_min)[1] + 1
            out.append(-s.on_sign * math.ldexp(1.0, e))
        return out

    def _shifts(self, gating):
        """(the shifts whose gating weights are all values, their weights as rows): once per gating set."""
        cache = self._shift_rows
        key = tuple(gating)
        if key not in cache:
            F = self.F
            # ``_betas``' weights: step i's is -on_sign * 2^(e - exps[i]); whether a signed power of two is
            # a value is asked once per (sign, exponent) (every point has its own gating set)
            signs = [-self.steps[i].on_sign for i in gating]
            exps = [math.frexp(self.steps[i].on_min)[1] - 1 for i in gating]
            ok = self._pow2_in

            def is_value(sg, k):
                if (sg, k) not in ok:
                    ok[(sg, k)] = in_format(F, sg * math.ldexp(1.0, k))
                return ok[(sg, k)]
            shifts = [e for e in range(-F.M - 2, F.e_max + 1)
                      if all(is_value(sg, e - x) for sg, x in zip(signs, exps))]
            B = np.array([[sg * math.ldexp(1.0, e - x) for sg, x in zip(signs, exps)] for e in shifts])
            cache[key] = (shifts, B.reshape(len(shifts), len(gating)))
        return cache[key]

    def gate_row(self, zi, gating, betas, extra, gamma):
        terms = [(b, self.U_X[i]) for b, i in zip(betas, gating)]
        if extra is not None:
            terms.append(extra)
        return np.broadcast_to(self.kit.row(terms, gamma), (len(self.X),))     # no terms: the bias alone

    def _gate_at(self, zi, gating, betas, extra, gamma) -> float:
        """The gate's pre-activation at its own point zi alone (``compact``: the same products and sums
        as the row's element zi)."""
        terms = [(b, self._step_at(i, zi)) for b, i in zip(betas, gating)]
        if extra is not None:
            terms.append((extra[0], float(np.asarray(extra[1], float)[zi])))
        return float(self.kit.row(terms, gamma))

    def _step_at(self, i, zi) -> float:
        """Gating step i's value at point zi, where it is dead (zi is a point it gates): L.  (Its row,
        where the context holds one, says the same: tests/test_theorem5_step_extremes.py.)"""
        u = self.U_X[i]
        return self.st.L if u is None else float(u[zi])

    def _offset_rows(self, gating):
        """Gating weight rows beyond ``_shifts``: each step's weight times 2^-1, 1 or 2, independently
        (not all 1), at every shift where all of them are values; tried only where the shared rows fail.

        Why: the shared rows normalize each step's weight to its smallest on value, so beta |on - L|
        lies in [2^e, 2^(e+1)) for all of them at once, and the largest weight the format allows caps
        e for every step.  mish~ on float8_e4m3b11fnuz: two gating steps with on values 0.875 and 16;
        the first caps beta at 16 (push 14) and the second then gets 2^-1 (push 8) where 14 is needed,
        though 1 (push 16) is a value too.  Also each step at its largest weight (any value of F, 1.875
        for an on value 16 where Omega = 30: push 30), alone and where the powers of two do not fit."""
        cache = self._offset_shift_rows
        key = tuple(gating)
        if key not in cache:
            F = self.F
            # each step's largest weight (any value of F) that keeps beta times its on values finite
            mags = np.unique(np.abs(F.values()))
            mags = mags[(mags > 0) & np.isfinite(mags)]
            top = []
            for i in gating:
                s = self.steps[i]
                ok = mags * max(abs(s.on_lo), abs(s.on_hi)) <= float(F.max_float)
                top.append(-s.on_sign * float(mags[ok].max()) if ok.any() else None)
            rows = [] if None in top else [top]
            for e in range(-F.M - 3, F.e_max + 2):
                base = self._betas(gating, e)
                for offs in itertools.product((0, 1, -1), repeat=len(gating)):
                    row = [math.ldexp(b, o) for b, o in zip(base, offs)]
                    if any(offs) and all(in_format(F, b) for b in row):
                        rows.append(row)
                if None not in top:
                    # the powers of two where they fit, else the largest weight
                    row = [b if abs(b) <= abs(t) else t for b, t in zip(base, top)]
                    if all(in_format(F, b) for b in row):
                        rows.append(row)
            cache[key] = np.array(rows, float).reshape(len(rows), len(gating))
        return cache[key]

    def _least_rows(self, gating, B):
        """The shared rows B and ``_offset_rows`` together, the smallest largest weight |beta| first
        (stable): with ``small_first`` the gate with the least backward gain that reaches a target.

        Why: ``_offset_rows`` puts each step's largest weight first, and a gradient gate's largest weight
        multiplies its backward value, which must stay below Omega / share (``_transfer_search``).  swish on
        the float16 box, point 35329 (x = 0.0029296875, g* = 52,576): the up-step's on values reach 65,280
        (weight at most 1.0029), the down-step's are 1,805; the first offset row weighs the down-step by
        36.28, which leaves a backward value of at most 65,504 / (3 x 36.28) = 601 at the gate, where the
        factors before it (gain 64 or 32) need 821 or more.  The gate found here weighs the steps by 2^-5
        and 1 (at most 21,834 at the gate)."""
        R = np.concatenate([B, self._offset_rows(gating)])      # both (rows, len(gating)), maybe 0 rows
        return R[np.argsort(np.abs(R).max(axis=1), kind="stable")]

    def find_gate(self, zi, extra, targets, small_first=False):
        """(betas, gamma, pre on X) with pre[zi] one of targets (earliest preferred), others dead.

        For each size of the gating weights (all sizes at once, as rows of 2-D arrays) the candidate
        biases gamma are tried: every value of the format (small formats), else the values near
        target - sum (``near_values``; the exact test decides).  The sum is monotone in gamma and in each
        term, so the largest sum over the other points decides deadness: computed on every point for
        small domains, else bounded (see ``_gate_sums``).  ``small_first``: take the smallest weights
        that reach any target (a gradient gate's weights multiply its backward value, which must stay
        finite); otherwise the best-ranked target, then the smallest weights.  Where no shared size
        works and ``offset_gates`` is set, per-step offsets of the sizes are tried (``_offset_rows``).
        """
        gating = sorted(self.gating(zi))
        if not gating and len(self.X) > 1:
            raise ConstructionError(f"point {zi + 1} has no gating step")
        shifts, B = self._shifts(gating)
        rows = [B] if shifts else []
        if self.least_gates and len(gating) > 1:
            rows = [self._least_rows(gating, B)]
        elif self.offset_gates and len(gating) > 1:
            rows.append(self._offset_rows(gating))
        err = ConstructionError(f"point {zi + 1} {self.X[zi].tolist()}: no gate puts it live and all other points dead")
        for Bk in rows:
            try:
                r = self._gate_with(zi, gating, Bk, extra, targets, small_first) if len(Bk) else None
            except ConstructionError as e:          # the indexed search's own verdict
                r, err = None, e
            if r is not None:
                return r
        raise err

    def _gate_with(self, zi, gating, B, extra, targets, small_first):
        """``find_gate`` for the gating weight rows B: (betas, gamma, pre) or None."""
        st, F = self.st, self.F
        tv, order, tv_sorted = self._sorted_targets(targets)
        if not len(tv):
            return None
        if (self.small_format and self.tables is not None and len(self.X) <= tuning.EXACT_GATE_POINTS
                and (gating or extra is not None)):
            r = self._gate_indexed(zi, gating, B, extra, targets, tv, small_first)
            if r is not None:
                return r
        at_z, hi_o, lo_o, bad = self._gate_sums(zi, gating, B, extra)
        if self.small_format:
            G = F.values()
            Gb = np.broadcast_to(G[None, :], (len(B), len(G)))
        else:
            # per row, the 64 best-ranked targets not finer than the sum's spacing (RN(at_z + gamma)
            # cannot land on a value much finer than at_z's ulp unless gamma cancels it exactly)
            fine = np.exp2(np.floor(np.log2(np.where(at_z == 0, 1.0, np.abs(at_z)))) - F.M)
            want = first_reached(tv, np.where(at_z == 0, -np.inf, fine), min(64, len(tv)))
            Gb = near_grid(F, want - at_z[:, None], 2).reshape(len(B), -1)
            bad |= np.isnan(Gb).all(axis=1)
            Gb = np.where(np.isnan(Gb), 0.0, Gb)
        shape = Gb.shape
        pz, o1 = add_array(np.broadcast_to(at_z[:, None], shape), Gb, F)
        # the rank of each sum at z among the targets; the bounds over the other points are added only
        # where it hits one (the same test as on the whole grid: ok = no overflow, the upper bound dead)
        rank_z = self._ranks_of(targets, tv, order, tv_sorted, pz, ~o1 & ~bad[:, None])
        ri, ci = np.nonzero(rank_z <= len(tv))
        g = Gb[ri, ci]
        hi, o2 = add_array(hi_o[ri], g, F)
        lo, o3 = add_array(lo_o[ri], g, F)
        good = ~(o2 | o3) & st.dead(hi)
        ranks = np.full(shape, len(tv) + 1, dtype=np.int64)
        ranks[ri[good], ci[good]] = rank_z[ri[good], ci[good]]
        best_s = ranks.min(axis=1)
        if (best_s <= len(tv)).any():
            si = int(np.nonzero(best_s <= len(tv))[0][0]) if small_first else int(np.argmin(best_s))
            gi = int(np.argmin(ranks[si]))
            betas, gamma = [float(b) for b in B[si]], float(Gb[si, gi])
            if self.compact:
                # the steps' rows are not kept: the sum at z, and the bounds above (exact by monotony:
                # see ``_gate_sums``) for every other point; the network is verified on every point
                pz = self._gate_at(zi, gating, betas, extra, gamma)
                if (tv == pz).any():
                    return betas, gamma, _AtPoint(zi, pz)
                return None
            pre = self.gate_row(zi, gating, betas, extra, gamma)
            if (tv == pre[zi]).any() and st.dead(np.delete(pre, zi)).all():      # (isin would sort tv)
                return betas, gamma, pre
        return None

    def _ranks_of(self, targets, tv, order, tv_sorted, v, mask):
        """rank[i] = the first position in tv of the value v[i] where mask holds and v[i] is a target, else
        len(tv) + 1: what the stable sorted search finds (``order[k]`` at the first k with
        tv_sorted[k] == v[i]).  bfloat16 and float16 look the value up by its 16-bit encoding (a
        table over every encoding, made once per fixed target list; -0 and +0 share a rank)."""
        none = len(tv) + 1
        code = codes16(self.F)
        if code is not None:
            fixed = self._fixed_targets(targets)
            tables = self._fixed_codes
            table = tables.get(id(targets)) if fixed else None
            if table is None:
                table = np.full(1 << 16, none, dtype=np.int64)
                np.minimum.at(table, code(tv), np.arange(len(tv)))
                z0, z1 = code(np.array([0.0, -0.0]))
                table[z0] = table[z1] = min(table[z0], table[z1])
                if fixed:
                    tables[id(targets)] = table
            return np.where(mask, table[code(np.where(mask, v, 0.0))], none)
        k = np.clip(np.searchsorted(tv_sorted, v), 0, len(tv_sorted) - 1)
        return np.where(mask & (tv_sorted[k] == v), order[k], none)

    def _fixed_targets(self, targets) -> bool:
        """Whether ``targets`` is one of the context's fixed target lists (gate_targets, or the same
        states nearest 1 first): what is derived from those is kept, keyed by the list's id."""
        if targets is self.gate_targets or targets is getattr(self, "_near_one_targets", None):
            return True
        # sliced gating and its slices: the sliced context's fixed lists too (``SlicedContext.fixed_lists``)
        lists = self.fixed_lists
        return lists is not None and lists.get(id(targets), (None,))[0] is targets

    def _sorted_targets(self, targets):
        """(targets as an array, their stable sort order, the sorted array): made once for the fixed
        list gate_targets (47,446 states on bfloat16, asked for by every gradient gate), else per call."""
        fixed = self._fixed_targets(targets)
        cache = self._fixed_sorted
        if fixed and id(targets) in cache:
            return cache[id(targets)]
        tv = np.asarray(targets, float)
        order = np.argsort(tv, kind="stable")
        r = (tv, order, tv[order])
        if fixed:
            cache[id(targets)] = r
        return r

    def point_gate(self, zi, extra, targets, small_first=False) -> Gate:
        """``find_gate`` as a Gate record (what the value and gradient branches read)."""
        betas, gamma, pre = self.find_gate(zi, extra, targets, small_first)
        return Gate(sorted(self.gating(zi)), betas, gamma, float(pre[zi]), max((abs(b) for b in betas), default=1.0))

    def _gate_sums(self, zi, gating, B, extra):
        """For each row of gating weights B: the gate's sum (without bias) at point zi, an upper and a
        lower bound of it over the other points, and a mask of rows where a product or sum overflows.

        Small domains: the sums on every point.  Large ones: the sum is computed in a fixed order and
        RN is monotone, so it is monotone in every term; at another point each coordinate of x is below,
        equal to or above z's, which fixes which gating steps are dead (term beta L) and which are on
        (term within beta [on_lo, on_hi]); the extra input (a pass) is bounded by its extremes over the
        other points.  Evaluating the sum at the terms' extremes, for every pattern but "all equal",
        bounds the sum at every other point (no overflow at the extremes means none in between).
        The extra input is summed last, so the sums of the gating terms alone (at z and per pattern) are
        the same for every gate of the point: they are kept for the point's next gate (``_gate_base``).
        """
        F, n = self.F, len(self.X)
        R = len(B)
        rowsum = self._rowsum

        cols = []
        if extra is not None:
            cols.append((np.full((R, 1), extra[0]), np.asarray(extra[1], float)[None, :]))
        if n <= tuning.EXACT_GATE_POINTS:
            cols = [(B[:, k:k + 1], self.U_X[i][None, :]) for k, i in enumerate(gating)] + cols
            allx, bad = rowsum(R, cols)
            allx = np.where(bad[:, None], 0.0, allx)
            others = np.delete(allx, zi, axis=1) if n > 1 else np.full((R, 1), -F.max_float)
            return allx[:, zi], others.max(axis=1), others.min(axis=1), bad
        # (gating is not empty here: find_gate refuses a point without gating steps on a domain of 2 or more)
        acc_z, over_z, bad_g, pats = self._gate_base(zi, gating, B)
        bad = over_z | bad_g
        if extra is None:
            at_z = acc_z
            ex = None
        else:
            at_z, o = rowsum(R, [(w, v[:, zi:zi + 1]) for w, v in cols[-1:]], acc_z, over_z)
            bad |= o
            ex = self._extra_bounds(extra, np.delete(np.asarray(extra[1], float), zi), R)
            bad |= ex[2]
        at_z = at_z[:, 0]
        hi_o = np.full(R, -np.inf)
        lo_o = np.full(R, np.inf)
        for hi_acc, hi_ov, lo_acc, lo_ov, (coords, pattern) in pats:
            if ex is not None:
                ex_p = ex
                if self.side_bounds:
                    # the extra input's extremes over the points of this pattern's sides only
                    m = self._pattern_points(zi, coords, pattern)
                    if not m.any():
                        continue
                    ex_p = self._extra_bounds(extra, np.asarray(extra[1], float)[m], R)
                    bad |= ex_p[2]
                hi_acc, hi_ov = rowsum(R, [(1.0, ex_p[1])], hi_acc, hi_ov)
                lo_acc, lo_ov = rowsum(R, [(1.0, ex_p[0])], lo_acc, lo_ov)
            bad |= hi_ov | lo_ov
            hi_o, lo_o = np.maximum(hi_o, hi_acc[:, 0]), np.minimum(lo_o, lo_acc[:, 0])
        # (the 16-bit formats' per-step sizes, ``offset_gates``: rows whose products overflow are bad rows,
        # not a missing bound; elsewhere as before, so every network built before stays as it was)
        checked = hi_o[~bad] if (self.offset_gates or self.least_gates) and not self.small_format else hi_o
        if n > 1 and not np.isfinite(checked).all():
            raise ConstructionError(f"point {zi + 1}: no other point found for the gate bound")   # pragma: no cover
        hi_o = np.where(bad | ~np.isfinite(hi_o), 0.0, hi_o)
        lo_o = np.where(bad | ~np.isfinite(lo_o), 0.0, lo_o)
        return np.where(bad, 0.0, at_z), hi_o, lo_o, bad

    def _extra_bounds(self, extra, v, R):
        """(least, largest product of the extra input's weight with the values v, per row of R; rows where
        one overflows)."""
        pr, o = mul_array(np.broadcast_to(np.full((R, 1), extra[0]), (R, 2)),
                          np.broadcast_to(np.array([[v.min(), v.max()]]), (R, 2)), self.F)
        return pr.min(axis=1, keepdims=True), pr.max(axis=1, keepdims=True), o.any(axis=1)

    def _pattern_points(self, zi, coords, pattern):
        """The points whose coordinates in coords lie below (-1), at (0) or above (1) point zi's as pattern
        says, and equal to zi's in the others (``side_bounds``)."""
        X = self.X
        m = np.ones(len(X), bool)
        sides = dict(zip(coords, pattern))
        for j in range(X.shape[1]):
            s = sides.get(j, 0)
            m &= (X[:, j] < X[zi, j]) if s < 0 else (X[:, j] > X[zi, j]) if s > 0 else (X[:, j] == X[zi, j])
        m[zi] = False
        return m

    def _rowsum(self, R, cols, acc=None, over=None):
        """The left-to-right rounded sum of the products w v (continuing the partial sum acc), and the
        rows where one overflows (or over already holds)."""
        F = self.F
        over = np.zeros(R, bool) if over is None else over.copy()
        for w, v in cols:
            shape = np.broadcast_shapes(np.shape(w), np.shape(v))
            p, o = mul_array(np.broadcast_to(w, shape), np.broadcast_to(v, shape), F)
            over |= o.any(axis=1)
            if acc is None:
                acc = p
            else:
                acc, o2 = add_array(acc, p, F)
                over |= o2.any(axis=1)
        return (np.zeros((R, 1)) if acc is None else acc), over

    def _pattern_cols(self, zi, gating, B):
        """Per pattern of sides (see ``_gate_sums``): the gating terms' (lo columns, hi columns) and the rows
        where a product overflows."""
        F, R, L = self.F, len(B), self.st.L
        steps = [self.steps[i] for i in gating]
        coords = sorted({s.coord for s in steps})
        exists = {(s.coord, 1 if s.up else -1) for s in steps}   # the sides of z_j that hold points
        out = []
        for pattern in itertools.product((-1, 0, 1), repeat=len(coords)):
            side = dict(zip(coords, pattern))
            if not any(pattern) or any(v and (j, v) not in exists for j, v in side.items()):
                continue
            lo_cols, hi_cols, bad = [], [], np.zeros(R, bool)
            for k, s in enumerate(steps):
                on = side[s.coord] == (1 if s.up else -1)
                vals = np.array([[s.on_lo, s.on_hi]]) if on else np.array([[L, L]])
                pr, o = mul_array(np.broadcast_to(B[:, k:k + 1], (R, 2)), np.broadcast_to(vals, (R, 2)), F)
                bad |= o.any(axis=1)
                lo_cols.append((1.0, pr.min(axis=1, keepdims=True)))
                hi_cols.append((1.0, pr.max(axis=1, keepdims=True)))
            out.append((lo_cols, hi_cols, bad, tuple(side[j] for j in coords)))
        return out

    def _gate_base(self, zi, gating, B):
        """(sum of the gating terms at zi, its overflow rows, the rows where a pattern's product overflows,
        per pattern (hi sum, its overflow rows, lo sum, its overflow rows)) of the gating terms alone:
        what every gate of point zi shares, kept per point (a point's value gate comes a round after its
        gradient gates; at most ``tuning.GATE_BASE_POINTS`` points at a time)."""
        key = (zi, tuple(gating), id(B), B.shape)
        bases = self._gate_bases
        hit = bases.get(key)
        if hit is not None and hit[0] is B:
            return hit[1]
        R = len(B)
        acc_z, over_z = self._rowsum(R, [(B[:, k:k + 1], np.array([[self._step_at(i, zi)]]))
                                         for k, i in enumerate(gating)])
        bad_g = np.zeros(R, bool)
        pats = []
        coords = sorted({self.steps[i].coord for i in gating})
        for lo_cols, hi_cols, bad, pattern in self._pattern_cols(zi, gating, B):
            bad_g |= bad
            hi_acc, hi_ov = self._rowsum(R, hi_cols)
            lo_acc, lo_ov = self._rowsum(R, lo_cols)
            pats.append((hi_acc, hi_ov, lo_acc, lo_ov, (coords, pattern)))
        r = (acc_z, over_z, bad_g, pats)
        if len(bases) >= tuning.GATE_BASE_POINTS:
            bases.clear()
        bases[key] = (B, r)
        return r

    def _gate_indexed(self, zi, gating, B, extra, targets, tv, small_first):
        """``find_gate`` on every point (small domains) of a tabulated format, in index space: the same
        left-to-right products and sums, bias grid and target ranks as lookups, so the same gate (or the
        same error); None when an input is not a value of the format (the caller rounds instead).

        Indices ascend with the values (one zero), so the bounds over the other points are index
        extremes; an overflow index propagates through sums, so a row is bad exactly where a product or
        a sum overflows; a target's rank is the first position holding its value, as the stable sorted
        search finds.  The gate's row ends with a bias of the grid (never -0), so its zeros are +0 as
        the rounded row's are.  tests/test_op_tables.py compares every call with the rounded ``find_gate``."""
        tb, kit, F, st = self.tables, self.kit, self.F, self.st
        over, n = tb.over, len(self.X)
        acc = self._gating_sums_indexed(gating, B)
        if acc is False:
            return None
        iex, pe = None, None
        if extra is not None:
            iex = (kit.index(extra[0]), self._index_array(extra[1]))
            if iex[0] is None or iex[1] is None:
                return None
            p = tb.mul_table[iex[0], iex[1]][None, :]
            if acc is None:
                acc = np.broadcast_to(p, (len(B), n))
            elif self.compiled_gates:
                pe = p[0]           # the kernel adds it to each row it reads (acc stays the gating sums)
            else:
                acc = np.broadcast_to(tb.add(acc, p), (len(B), n))
        if self._fixed_targets(targets):
            ranks = self._fixed_ranks
            rank = ranks.get(id(targets))
            if rank is None:
                rank = ranks[id(targets)] = self._target_ranks(tv)
        else:
            rank = self._target_ranks(tv)
        if rank is None:
            return None
        dead = st.dead_by_index(tb)
        add = tb.add_table
        # with no other point the bounds are -Omega (its index)
        low = kit.index(-F.max_float) if n == 1 else 0
        if low is None:
            return None
        if self.compiled_gates:
            # the same choice by a compiled loop over the rows (``kernels.gate_pick_py``; sliced gating's
            # slice gates, where numba is loaded anyway): it stops at the first row that hits with
            # small_first, and makes no (rows x values) arrays.  tests/test_theorem5_fast_paths.py
            si, gi = kernels.gate_pick(acc, zi, low, over, add, dead, rank, len(tv), small_first, pe)
        else:
            si, gi = self._gate_pick_np(acc, zi, low, over, add, dead, rank, len(tv), small_first)
        if si >= 0:
            betas, gamma = [float(b) for b in B[si]], float(tb.values[gi])
            # the gate's row as Kit.row computes it: its products and sums without the bias are row si
            # of acc (the same terms in the same order; row si is not bad, so none of them overflows)
            s = add[acc[si] if pe is None else add[acc[si], pe], gi]
            if (s == over).any():
                raise ConstructionError(f"a sum overflows {F.name}")
            if rank[s[zi]] < len(tv) and dead[s[:zi]].all() and dead[s[zi + 1:]].all():
                return betas, gamma, tb.value(s)
        raise ConstructionError(f"point {zi + 1} {self.X[zi].tolist()}: no gate puts it live and all other points dead")

    def _gate_pick_np(self, acc, zi, low, over, add, dead, rank, ntv, small_first):
        """``_gate_indexed``'s (row, bias index) by numpy arrays, (-1, -1) where none is ok: the choice of
        ``kernels.gate_pick`` (same arguments; low: the bounds' index when acc has one point only)."""
        bad = (acc == over).any(axis=1)
        ia = acc[:, zi]
        if acc.shape[1] > 1:
            ih = np.maximum(acc[:, :zi].max(axis=1, initial=0), acc[:, zi + 1:].max(axis=1, initial=0))
            il = np.minimum(acc[:, :zi].min(axis=1, initial=over), acc[:, zi + 1:].min(axis=1, initial=over))
        else:                                                  # no other point: the bound is -Omega
            ih = il = np.full(len(acc), low, dtype=acc.dtype)
        Pz = add[ia, :over]
        ok = (Pz != over) & (add[il, :over] != over) & dead[add[ih, :over]] & ~bad[:, None]   # dead[over]: False
        ranks = np.where(ok, rank[Pz], ntv + 1)
        best_s = ranks.min(axis=1)
        if (best_s <= ntv).any():
            si = int(np.nonzero(best_s <= ntv)[0][0]) if small_first else int(np.argmin(best_s))
            return si, int(np.argmin(ranks[si]))
        return -1, -1

    def _index_array(self, v):
        """Table indices of an array of values, the last one remembered (a gate's pass input is read by
        its sums and its row); None when v holds a number outside the format."""
        last = getattr(self, "_last_index", None)
        if last is not None and last[0] is v:
            return last[1]
        i = self.kit.index(v)
        self._last_index = (v, i)
        return i

    def _ux_index(self, i):
        """Table indices of the gating step values U_X[i] (computed once: the steps are fixed)."""
        cache = self._ux_idx
        if i not in cache:
            cache[i] = self.kit.index(self.U_X[i])
        return cache[i]

    def _gating_sums_indexed(self, gating, B):
        """The index array of the left-to-right sums of the gating terms (rows of B) on every point, once
        per gating set; None without gating terms, False when a step value is not a value."""
        cache = self._gating_acc
        key = (tuple(gating), B.tobytes())
        if key not in cache:
            tb, acc = self.tables, None
            for k, i in enumerate(gating):
                iw, iv = self.kit.index(B[:, k]), self._ux_index(i)
                if iw is None or iv is None:
                    acc = False
                    break
                p = tb.mul_table[iw[:, None], iv[None, :]]
                acc = p if acc is None else tb.add_table[acc, p]
            cache[key] = acc
        return cache[key]

    def _target_ranks(self, tv):
        """rank[i] = the first position in tv of the value of index i (len(tv) + 1 where none), or None
        when a target is not a value of the format."""
        it = self.kit.index(tv)
        if it is None:
            return None
        rank = np.full(self.tables.over + 1, len(tv) + 1, dtype=np.int64)
        np.minimum.at(rank, it, np.arange(len(tv)))
        return rank

    def _map_two(self, v_off, v_on, off_ok, on_target, choices=False):
        """(a, c) with off_ok(T(RN(a v_off + c))) and T(RN(a v_on + c)) == on_target.

        With choices: a list of up to two such pairs, the preferred one and the smallest |a|.
        Maps onto a zero of T ("zero") are cached: every value branch asks for the same few."""
        if isinstance(off_ok, str):
            r = self.cached(("map_two", v_off, v_on, off_ok, on_target, choices),
                             lambda: self._map_two_search(v_off, v_on, off_ok, on_target, choices))
            return list(r) if choices else r
        return self._map_two_search(v_off, v_on, off_ok, on_target, choices)

    def _map_two_search(self, v_off, v_on, off_ok, on_target, choices=False):
        zs = self.zero_states if off_ok == "zero" else off_ok
        zs = zs[np.argsort(np.abs(zs - 0))][:16]
        if self.small_format and self.tables is not None:
            r = self._map_two_indexed(v_off, v_on, zs, on_target)
            if r is not NotImplemented:
                return ([] if r is None else [r]) if choices else r
        return self._map_two_rounded(v_off, v_on, zs, on_target, choices)

    def _map_two_indexed(self, v_off, v_on, zs, on_target):
        """``_map_two_rounded`` on a small format with index tables, every z0 of zs at once: the pair it
        returns (with choices: its one pair, since there k is k_all), or None; NotImplemented when an
        input is not a value of the format (the rounded search then decides).

        Why the same pair: the products, sums and their overflows are the tables' (made by the same
        array operations, index equality is value equality with -0 = +0 as the comparison p_off == z0
        has it), T by index is T of the value (sigma~ maps -0 and +0 alike); the first z0 (in zs' order)
        with a hit and its first candidate (in A's order) are taken, as the loop does.  The returned c
        is computed again from the floats (RN(z0 - RN(a v_off)), the scalar twins of the array
        operations), so that the sign of a zero c is the rounded search's."""
        tb, kit = self.tables, self.kit
        known = self._map_two_memo
        zs_key = zs.tobytes()
        if zs_key not in known:          # (every value branch asks with the same zs)
            known[zs_key] = kit.index(zs)
        iv_off, iv_on, iz = kit.index(v_off), kit.index(v_on), known[zs_key]
        if iv_off is None or iv_on is None or iz is None or (iz == tb.over).any():
            return NotImplemented
        if not hasattr(self, "_map_two_A"):
            A = self.nonzero_values
            A = A[np.argsort(np.abs(A), kind="stable")]
            self._map_two_A = (A, tb.index(A))
        A, iA = self._map_two_A
        n = tb.over
        # the v_off side (every value branch asks with v_off = L and the same zs): C and the (z0, a) pairs
        # that land exactly on z0 there, kept per (v_off, zs); an a whose product overflows on either
        # side has no pair (its C or its p_on is the overflow index, as the filter on both sides had it)
        off_key = ("off", int(iv_off), zs_key)
        if off_key not in known:
            ro = tb.mul_table[iA, iv_off]
            C = tb.add_table[iz[:, None], tb.neg_table[ro][None, :]]      # (z0, a): RN(z0 - RN(a v_off))
            p_off = tb.add_table[ro[None, :], C]
            known[off_key] = (C, (ro != n)[None, :] & (C != n) & (p_off != n) & (p_off == iz[:, None]))
        C, hit_off = known[off_key]
        rn = tb.mul_table[iA, iv_on]
        p_on = tb.add(rn[None, :], C)
        t_key = ("target", on_target)
        if t_key not in known:           # the indices where T is on_target (not the overflow index)
            tv, t_over = kit.by_index(False)
            known[t_key] = ~t_over & (tv == on_target)
        hit = hit_off & (rn != n)[None, :] & known[t_key][p_on]
        rows = np.flatnonzero(hit.any(axis=1))
        if not len(rows):
            return None
        j = int(np.argmax(hit[rows[0]]))
        a, z0 = float(A[j]), float(zs[rows[0]])
        return a, kit.add(z0, -kit.mul(a, float(v_off)))

    def _map_two_rounded(self, v_off, v_on, zs, on_target, choices=False):
        kit, F = self.kit, self.F
        if self.small_format:
            A = self.nonzero_values
        else:   # the short weights, and those near (q - z0) / (v_on - v_off) for states q with T(q) = target
            q = self.st.z[self.st.t == on_target][:64]
            A = np.union1d(self.block_weights, near_values(F, (q[:, None] - zs[None, :]) / (v_on - v_off), 2))
        A = A[np.argsort(np.abs(A), kind="stable")]     # smallest |a| first: smaller backward products
        r_off, o1 = mul_array(A, np.full_like(A, v_off), F)
        r_on, o2 = mul_array(A, np.full_like(A, v_on), F)
        ok = ~(o1 | o2)
        A, r_off, r_on = A[ok], r_off[ok], r_on[ok]
        for z0 in zs:
            c, oc = add_array(np.full_like(r_off, z0), -r_off, F)
            p_off, o3 = add_array(r_off, c, F)
            p_on, o4 = add_array(r_on, c, F)
            good = ~(oc | o3 | o4)
            good &= p_off == z0
            if not good.any():
                continue
            t_on, ov = kit.R.value_array(p_on[good])
            hit = (~ov) & (t_on == on_target)
            if hit.any():
                k = k_all = np.nonzero(hit)[0]
                if not self.small_format:
                    # a flat on state (T' = 0, e.g. tanh saturated at 1) first: the backward value that
                    # reaches it stops there, so a large output weight costs no gain behind it
                    d_on, od = kit.R.derivative_array(p_on[good][k])
                    flat = k[(d_on == 0) & ~od]
                    k = flat if len(flat) else k
                pair = lambda i: (float(A[good][i]), float(c[good][i]))
                if choices:
                    return list(dict.fromkeys([pair(k[0]), pair(k_all[0])]))
                return pair(k[0])
        return [] if choices else None
