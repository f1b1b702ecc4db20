"""Theorem 5: a network with f(x) = f*(x) and D_(f,x)(h*(x)) = g*(x) on every point of a finite domain.

The construction (condcheck's own; the paper's weights were not available) rests on one property of
the rounded activation T = sigma~, the *dead tail* of Condition 1: pre-activations z <= z_d where
T(z) = L and T'(z) = 0 exactly.  A neuron pushed into the dead tail outputs the constant L and passes
no gradient at all, whatever its upstream.  Layers (d = input dimension):

1. separators, sources, constants.  For every coordinate j and every gap between consecutive
   coordinate values of the domain, a neuron n = T(w x_j + b) whose values on one side of the gap are
   all below (or all above) its values on the other side (a *monotone separator*, found by search
   over (w, b)).  For every gradient branch (point z, coordinate j) a *source* T(w_g x_j + b_g) whose
   pre-activation at z is a state with T' != 0 (Condition 3).  Constant neurons (zero weights) give
   the constants the next row needs.
2. steps and passes.  A *step* row v = s*n (+) kappa (+) c_k0 (+) (-c_k0) (+) ... (+) c_K (+) (-c_K)
   (+) z_d.  kappa puts the gap at 0: v <= 0 on the *dead side*, v >= g > 0 on the *on side*.  The
   chain of constants c_k = succ(2^k) (rounding to nearest, ties to even) snaps any v >= g up to at
   least 2^(K-M) and keeps v <= 0 at most 0, so the step's pre-activation is <= z_d (dead) on one side
   and far from the tail on the other.  Two steps per gap: "x_j >= upper value" and
   "x_j <= lower value".  The *pass* neuron of a gradient branch carries its source on (states
   with T' != 0 at z).
3. gates.  For point z the gating steps are the down-step of the gap below z_j and the up-step of the
   gap above z_j, for each j: all of them are dead exactly at x = z, and at any other point of the
   domain at least one is on.  The value neuron V_z = T(beta * sum(steps) + gamma) and the gradient
   gate G_z = T(beta * sum(steps) + a3 * pass + gamma) are in a live state at z and pushed into the
   dead tail elsewhere.  At z the steps they read are dead, so no gradient reaches the separators
   through them; elsewhere V_z and G_z are dead.  So the value path has AD gradient exactly 0 on the
   whole domain, and a gradient branch is nonzero only at its own point.
4. value outputs and passes.  V'_z = T(a_v V_z + c_v) maps L to a zero of T and the on value of V_z
   to a power of two P_z, so that the output weight f*(z)/P_z is exact; the gradient branch gets one
   more pass neuron.  Two constant neurons give +C and -C.
5. output: C (+) A_1 P4_1 (+) ... (-C) (+) f_1 V'_1 (+) ...  Every gradient-branch term is below a
   quarter ulp of C, so it is absorbed: the partial sum stays C, then C - C = 0, and the value terms
   (exactly one nonzero at each domain point) give f*(x).  AD still sees the weights A: the backward
   chain y (x) A (x) T'(p4) (x) a4 (x) T'(p3) (x) a3 (x) T'(p2) (x) a2 (x) T'(s0) (x) w_g is made equal to
   g*_j(z) by choosing a4 and A (two-multiplication transfer) and powers of two for the rest.

Every number is chosen by exact computation on the domain and the network is verified exactly on
every point before it is returned.  A failure of any requirement raises ConstructionError naming it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .errors import CondcheckError
from .formats import Format, get_format
from .network import Layer, Network
from .ops import add_array, mul_array
from .rounded_activation import get_rounded


class ConstructionError(CondcheckError):
    """The constructor could not build the network; the message names the requirement that failed."""


# ---- exact arithmetic on arrays of format values ------------------------------------------------------
class Kit:
    """RN_F arithmetic and T = sigma~ on arrays, raising on overflow (a network may not overflow)."""

    def __init__(self, activation, fmt: Format, implementation: str):
        self.fmt = fmt
        self.R = get_rounded(activation, fmt, implementation)
        self.act = self.R.activation

    def _ok(self, r, over, what):
        if np.any(over):
            raise ConstructionError(f"{what} overflows {self.fmt.name}")
        return r

    def mul(self, a, b, what="a product"):
        a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
        return self._ok(*mul_array(a, b, self.fmt), what)

    def add(self, a, b, what="a sum"):
        a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
        return self._ok(*add_array(a, b, self.fmt), what)

    def T(self, z, what="an activation value"):
        z = np.asarray(z, float)
        v, o = self.R.value_array(z.ravel())
        return self._ok(v, o, what).reshape(z.shape)

    def dT(self, z, what="an activation derivative"):
        z = np.asarray(z, float)
        v, o = self.R.derivative_array(z.ravel())
        return self._ok(v, o, what).reshape(z.shape)

    def row(self, terms, bias):
        """The paper-order affine row: products, summed left to right, bias last."""
        s = None
        for w, v in terms:
            p = self.mul(w, v)
            s = p if s is None else self.add(s, p)
        if s is None:
            return np.asarray(bias, float)
        return self.add(s, bias)

    def exact(self, x: float) -> bool:
        return bool(self.fmt.contains(x))


def _pow2(x: float) -> bool:
    if x == 0 or not math.isfinite(x):
        return False
    m, _ = math.frexp(abs(x))
    return m == 0.5


# ---- the activation's states ----------------------------------------------------------------------------
@dataclass
class States:
    """Pre-activation states of T that the construction uses (all values of an enumerable format)."""

    z: np.ndarray            # candidate pre-activations, ascending
    t: np.ndarray            # T(z)
    dt: np.ndarray           # T'(z)
    L: float                 # the dead-tail value
    z_dead: float            # every candidate <= z_dead is dead: T = L and T' = 0
    dead_count: int

    def dead(self, z) -> np.ndarray:
        return np.asarray(z) <= self.z_dead

    @property
    def passes(self):
        """States with T' a nonzero power of two (exact gradient scaling)."""
        m = np.array([_pow2(v) for v in self.dt])
        return self.z[m], self.t[m], self.dt[m]

    @property
    def constants(self):
        """States whose value is a positive power of two (constant neurons)."""
        m = np.array([_pow2(v) and v > 0 for v in self.t])
        return self.z[m], self.t[m]


def find_states(kit: Kit) -> States:
    fmt = kit.fmt
    if not fmt.enumerable or fmt.bits > 16:
        raise ConstructionError(f"the constructor enumerates the states of the activation; {fmt.name} has "
                                f"{fmt.bits} bits and only formats of at most 16 bits are supported so far")
    tab = kit.R.table()
    z = tab.points
    ok = ~(tab.sigma_overflow | tab.dsigma_overflow)
    z, t, dt = z[ok], tab.sigma[ok], tab.dsigma[ok]
    L = t[0]
    dead = (t == L) & (dt == 0)
    if not dead[0]:
        raise ConstructionError(f"Condition 1 (dead tail) fails for {kit.act.name} on {fmt.name}: at the most "
                                f"negative value {z[0]!r}, T = {t[0]!r} and T' = {dt[0]!r} (T' must be 0)")
    n = int(np.argmin(dead)) if not dead.all() else len(dead)
    if n == len(dead):
        raise ConstructionError(f"Condition 1 fails for {kit.act.name} on {fmt.name}: T is constant with T' = 0 "
                                f"everywhere (no live state)")
    return States(z, t, dt, float(L), float(z[n - 1]), n)


# ---- step layer ----------------------------------------------------------------------------------------
@dataclass
class Step:
    coord: int
    gap: int                 # index of the upper value of the gap in the coordinate's sorted values
    up: bool                 # True: on iff x_j >= upper value; False: on iff x_j <= lower value
    w: float
    b: float
    s: float                 # sign applied to the separator
    kappa: float
    k0: int
    K: int
    on_min: float = 0.0      # min |T - L| over the on side
    on_max: float = 0.0
    on_sign: float = 0.0


def _separator_table(kit: Kit, vals: np.ndarray, st: States):
    """T(w x + b) for every (w, b) pair of candidates, on the coordinate values; rows finite only."""
    F = kit.fmt
    V = F.values()
    cands = []
    for w in V:
        if w == 0:
            continue
        wx, o = mul_array(np.full_like(vals, w), vals, F)
        if o.any():
            continue
        pre, o2 = add_array(np.broadcast_to(wx, (len(V), len(vals))), np.broadcast_to(V[:, None], (len(V), len(vals))), F)
        good = ~o2.any(axis=1)
        if not good.any():
            continue
        pre = pre[good]
        t, ov = kit.R.value_array(pre.ravel())
        t = t.reshape(pre.shape)
        fine = ~ov.reshape(pre.shape).any(axis=1)
        cands.append((np.full(fine.sum(), w), V[good][fine], t[fine]))
    W = np.concatenate([c[0] for c in cands])
    B = np.concatenate([c[1] for c in cands])
    Tv = np.concatenate([c[2] for c in cands])
    return W, B, Tv


def _choose_step(kit: Kit, vals, gap, up, table):
    """The separator with the smallest on-side spread relative to the gap, and its sign and kappa."""
    W, B, Tv = table
    if up:
        on, dead = Tv[:, gap:], Tv[:, :gap]
    else:
        on, dead = Tv[:, :gap], Tv[:, gap:]
    best = None
    for s in (1.0, -1.0):
        so, sd = s * on, s * dead
        lo_on = so.min(axis=1)
        hi_dead = sd.max(axis=1)
        ok = lo_on > hi_dead
        if not ok.any():
            continue
        spread = (so.max(axis=1) - hi_dead) / np.where(ok, lo_on - hi_dead, 1)
        spread = np.where(ok, spread, np.inf)
        i = int(np.argmin(spread))
        if best is None or spread[i] < best[0]:
            best = (spread[i], s, i, hi_dead[i])
    if best is None:
        return None
    _, s, i, edge = best
    return float(W[i]), float(B[i]), s, float(-edge)


def _chain(kit: Kit, v, k0: int, K: int):
    F = kit.fmt
    for k in range(k0, K + 1):
        c = math.ldexp(1 + 2.0 ** -F.M, k)
        v = kit.add(kit.add(v, c), -c)
    return v


# ---- the builder ---------------------------------------------------------------------------------------
@dataclass
class _Cols:
    """Columns of one layer under construction: each neuron is a dict of terms plus a bias."""

    rows: list = field(default_factory=list)

    def add(self, terms: dict, bias: float) -> int:
        self.rows.append((terms, bias))
        return len(self.rows) - 1

    def layer(self, n_in: int) -> Layer:
        r, c, d = [], [], []
        for i, (terms, _) in enumerate(self.rows):
            for j, w in terms.items():
                if w != 0:
                    r.append(i), c.append(j), d.append(w)
        m = sp.csr_matrix((d, (r, c)), shape=(len(self.rows), n_in), dtype=np.float64)
        return Layer(m, np.array([b for _, b in self.rows], dtype=np.float64))


def _live_pass(st: States, avoid_small=True):
    """Pass states (T' a nonzero power of two, not dead), smallest |T| first."""
    z, t, dt = st.passes
    m = z > st.z_dead
    z, t, dt = z[m], t[m], dt[m]
    o = np.argsort(np.abs(t), kind="stable")
    return z[o], t[o], dt[o]


def _solve_affine(kit: Kit, x_at: float, target: float):
    """c with RN(x_at + c) == target, or None."""
    c = kit.add(target, -x_at)
    c = float(c)
    return c if float(kit.add(x_at, c)) == target else None


def construct_theorem5(activation, fmt, points, values, upstream, gradients, implementation="exact",
                       verify_result=True):
    """Build a network f with f(x) = values and D_(f,x)(upstream) = gradients on every point."""
    from .netfile import Claim
    from .verify import verify as _verify

    F = get_format(fmt)
    kit = Kit(activation, F, implementation)
    X = np.asarray(points, float)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    N, d = X.shape
    fv = np.asarray(values, float).reshape(N)
    hv = np.asarray(upstream, float).reshape(N)
    gv = np.asarray(gradients, float).reshape(N, d)
    st = find_states(kit)
    L = st.L
    M = F.M

    # constants: a constant neuron whose value K1 is a positive power of two
    cz, ct = st.constants
    if len(cz) == 0:
        raise ConstructionError(f"Condition 1 (constants) fails: {kit.act.name} takes no positive power of two "
                                f"value on {F.name}")
    i = int(np.argmin(np.abs(np.log2(ct))))          # closest to 1: kappa / K1 and c_k / K1 stay exact
    b_const, K1 = float(cz[i]), float(ct[i])

    # ---- steps ------------------------------------------------------------------------------------------
    coord_vals = [np.unique(X[:, j]) for j in range(d)]
    coord_idx = [np.searchsorted(coord_vals[j], X[:, j]) for j in range(d)]
    steps: list[Step] = []
    step_pre = []            # pre-activation of each step on its coordinate's values
    step_of = {}
    for j in range(d):
        vals = coord_vals[j]
        if len(vals) < 2:
            continue
        table = _separator_table(kit, vals, st)
        for gap in range(1, len(vals)):
            for up in (True, False):
                ch = _choose_step(kit, vals, gap, up, table)
                if ch is None:
                    raise ConstructionError(
                        f"distinguishability fails: no neuron T(w x_{j + 1} + b) separates coordinate values "
                        f"<= {vals[gap - 1]!r} from >= {vals[gap]!r} monotonically")
                w, b, s, kappa = ch
                n = kit.T(kit.row([(w, vals)], b))
                v = kit.add(kit.mul(s, n), kappa)
                on = v > 0
                g = float(v[on].min())
                k0 = max(math.frexp(g)[1] - 1 + M, F.e_min)
                pre = None
                for K in list(range(F.e_max - 1, k0 - 1, -1)) + [k0 - 1]:
                    try:
                        q = _chain(kit, v, k0, K)        # K = k0 - 1: no chain at all
                        pre = kit.add(q, st.z_dead)
                        break
                    except ConstructionError:
                        continue
                if pre is None:
                    raise ConstructionError(f"no quantizer chain fits for the step at coordinate {j + 1}")
                if not (st.dead(pre[~on]).all() and not st.dead(pre[on]).any()):
                    raise ConstructionError(f"step at coordinate {j + 1} gap {gap}: quantized pre-activations "
                                            f"do not split into dead and live states")
                tv = kit.T(pre[on]) - L
                sign = np.sign(tv)
                if (sign == 0).any() or (sign != sign[0]).any():
                    raise ConstructionError(f"step at coordinate {j + 1} gap {gap}: on-side values are not all on one "
                                            f"side of the dead value {L!r}")
                step = Step(j, gap, up, w, b, s, kappa, k0, K, float(np.abs(tv).min()), float(np.abs(tv).max()),
                            float(sign[0]))
                step_of[(j, gap, up)] = len(steps)
                steps.append(step)
                step_pre.append(pre)
    step_val = [kit.T(p) for p in step_pre]

    def gating(zi):
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

    U_X = [step_on_X(i) for i in range(len(steps))]
    W1 = float(np.max(np.abs(X))) if N else 1.0
    ctx = _Ctx(kit, st, F, X, steps, U_X, gating)
    values_part = [ctx.value_branch(zi, fv[zi]) for zi in range(N) if fv[zi] != 0]
    grad_part = []
    for zi in range(N):
        for j in range(d):
            if gv[zi, j] != 0:
                if hv[zi] == 0:
                    raise ConstructionError(f"point {zi + 1} {X[zi].tolist()}: upstream h* = 0 but gradient g* != 0 "
                                            f"(AD maps a zero upstream to a zero gradient)")
                grad_part.append(ctx.gradient_branch(zi, j, hv[zi], gv[zi, j]))
    net = _assemble(kit, st, F, d, steps, values_part, grad_part, (b_const, K1), activation, implementation)
    claim = Claim(5, X, fv, hv, gv)
    if verify_result:
        res = _verify(net, claim)
        if not res.ok:
            raise ConstructionError("the constructed network failed exact verification: " + res.summary())
    return net, claim


@dataclass
class _Branch:
    zi: int
    gating: list
    beta: list
    gamma: float
    a_next: float
    c_next: float
    out_weight: float
    # gradient branches only
    coord: int = -1
    w_g: float = 0.0
    b_g: float = 0.0
    a2: float = 0.0
    c2: float = 0.0
    a3: float = 0.0


class _Ctx:
    def __init__(self, kit, st, F, X, steps, U_X, gating):
        self.kit, self.st, self.F, self.X, self.steps, self.U_X, self.gating = kit, st, F, X, steps, U_X, gating
        z, t, dt = st.z, st.t, st.dt
        live = z > st.z_dead
        self.zero_states = z[(t == 0)]
        self.pass_z, self.pass_t, self.pass_d = _live_pass(st)
        self.pow2_values = sorted({float(v) for v in t[live] if _pow2(v) and v > 0})

    def _betas(self, gating, shift_exp):
        out = []
        for i in gating:
            s = self.steps[i]
            e = shift_exp - math.frexp(s.on_min)[1] + 1
            out.append(-s.on_sign * math.ldexp(1.0, e))
        return out

    def _gate_row(self, zi, gating, betas, extra, gamma):
        terms = [(b, self.U_X[i]) for b, i in zip(betas, gating)]
        if extra is not None:
            terms.append(extra)
        return self.kit.row(terms, gamma)

    def _gate(self, zi, extra, targets):
        """(betas, gamma, pre on X) with pre[zi] a target state and every other point dead."""
        kit, st = self.kit, self.st
        gating = sorted(self.gating(zi))
        if not gating and len(self.X) > 1:
            raise ConstructionError(f"point {zi + 1} has no gating step")
        for shift_exp in range(0, self.F.e_max + 1):
            betas = self._betas(gating, shift_exp)
            try:
                zero = self._gate_row(zi, gating, betas, extra, 0.0)
            except ConstructionError:
                break
            at = float(zero[zi])
            for q in targets:
                gamma = _solve_affine(kit, at, float(q))
                if gamma is None:
                    continue
                try:
                    pre = self._gate_row(zi, gating, betas, extra, gamma)
                except ConstructionError:
                    continue
                others = np.delete(pre, zi)
                if pre[zi] == q and st.dead(others).all():
                    return betas, gamma, pre
        raise ConstructionError(f"point {zi + 1} {self.X[zi].tolist()}: no gate puts it live and all other points dead")

    def _map_two(self, v_off, v_on, off_ok, on_target):
        """(a, c) with off_ok(T(RN(a v_off + c))) and T(RN(a v_on + c)) == on_target."""
        kit, F = self.kit, self.F
        A = F.values()
        A = A[A != 0]
        A = A[np.argsort(np.abs(A), kind="stable")]     # smallest |a| first: smaller backward products
        r_off, o1 = mul_array(A, np.full_like(A, v_off), F)
        r_on, o2 = mul_array(A, np.full_like(A, v_on), F)
        ok = ~(o1 | o2)
        A, r_off, r_on = A[ok], r_off[ok], r_on[ok]
        zs = self.zero_states if off_ok == "zero" else off_ok
        for z0 in zs[np.argsort(np.abs(zs - 0))][:16]:
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
                k = int(np.nonzero(hit)[0][0])
                return float(A[good][k]), float(c[good][k])
        return None

    def value_branch(self, zi, f):
        kit, st, F = self.kit, self.st, self.F
        # V's live state at z: a state whose value is a positive power of two
        live = (st.z > st.z_dead) & (st.t != st.L)
        cand = st.z[live]
        order = np.argsort(np.abs(st.t[live] - 1.0), kind="stable")
        targets = cand[order][:32]
        betas, gamma, pre = self._gate(zi, None, targets)
        Pv = float(kit.T(pre[zi]))
        # V': off (value L) -> a zero of T; on (Pv) -> a power of two P with f / P exact
        tries = sorted(self.pow2_values, key=lambda P: (abs(f) > P, abs(math.frexp(P)[1] - math.frexp(f)[1])))
        # prefer P >= |f|: the output weight |f / P| <= 1 keeps y (x) weight finite for every |y| <= Omega
        for P in tries:
            A = f / P
            if not F.contains(A):
                continue
            m = self._map_two(st.L, Pv, "zero", P)
            if m is None:
                continue
            a, c = m
            return _Branch(zi, sorted(self.gating(zi)), betas, gamma, a, c, A)
        raise ConstructionError(f"point {zi + 1}: no output scaling realizes the value {f!r}")

    def gradient_branch(self, zi, j, y, g):
        raise ConstructionError("gradient branches are not built yet")


def _assemble(kit, st, F, d, steps, values_part, grad_part, const, activation, implementation):
    b_const, K1 = const
    M = F.M
    # layer 1: separators, sources, kappa constant, chain constants
    l1 = _Cols()
    sep = [l1.add({s.coord: s.w}, s.b) for s in steps]
    src = [l1.add({br.coord: br.w_g}, br.b_g) for br in grad_part]
    kap = l1.add({}, b_const)
    levels = sorted({k for s in steps for k in range(s.k0, s.K + 1)})
    chain_col = {}
    for k in levels:
        chain_col[k] = (l1.add({}, b_const), l1.add({}, b_const))
    # layer 2: steps, passes
    l2 = _Cols()
    for i, s in enumerate(steps):
        terms = {sep[i]: s.s, kap: s.kappa / K1}
        for k in range(s.k0, s.K + 1):
            c = math.ldexp(1 + 2.0 ** -M, k)
            terms[chain_col[k][0]] = c / K1
            terms[chain_col[k][1]] = -c / K1
        l2.add(terms, st.z_dead)
    n_steps = len(steps)
    pas2 = [l2.add({src[i]: br.a2}, br.c2) for i, br in enumerate(grad_part)]
    # layer 3: values, gates
    l3 = _Cols()
    vcol = [l3.add({i: b for i, b in zip(br.gating, br.beta)}, br.gamma) for br in values_part]
    gcol = []
    for i, br in enumerate(grad_part):
        terms = {k: b for k, b in zip(br.gating, br.beta)}
        terms[pas2[i]] = br.a3
        gcol.append(l3.add(terms, br.gamma))
    # layer 4: +C, passes, -C, value outputs
    l4 = _Cols()
    cpos = l4.add({}, b_const)
    p4 = [l4.add({gcol[i]: br.a_next}, br.c_next) for i, br in enumerate(grad_part)]
    cneg = l4.add({}, b_const)
    v4 = [l4.add({vcol[i]: br.a_next}, br.c_next) for i, br in enumerate(values_part)]
    # output
    out = {cpos: 1.0, cneg: -1.0}
    for i, br in enumerate(grad_part):
        out[p4[i]] = br.out_weight
    for i, br in enumerate(values_part):
        out[v4[i]] = br.out_weight
    l5 = _Cols()
    l5.add(out, 0.0)
    layers = [l1.layer(d), l2.layer(len(l1.rows)), l3.layer(len(l2.rows)), l4.layer(len(l3.rows)),
              l5.layer(len(l4.rows))]
    return Network(F, kit.act.name, layers, implementation, d)
