"""The generic Theorem 7 construction, for any activation satisfying Conditions 1-3: chains on pass
states, absorbed by constant neurons; several points read gates whose pass paths carry the gradient
to the input, and zero-gradient value branches (docs/theorem7.md, "Any activation").
"""
from __future__ import annotations

import math

import numpy as np

from ..constructors.errors import ConditionFailure, ConstructionError
from ..constructors.kit import is_pow2
from ..errors import CondcheckError
from ..formats import Format
from ..netfile import Claim
from ..ops import mul_float
from ..targets import point_text
from .activation import ActivationTable
from .assemble import Builder, finish
from .chains import Chains, plan_chains, point_terms, rn_mul, step_chain_scalar
from .gating import Gating, pass_plans
from .value_branches import branches_for_value


def absorber(act: "ActivationTable", h_max: float):
    """(b, w, n, C): n constant neurons sigma~(b) = K (a positive power of two) with weight w each, whose
    left-to-right sum K w (+) ... (+) K w is C = 2^e_max (n a power of two, every partial sum j K w exact),
    the fewest n with |w| h_max <= Omega (each neuron's backward product stays finite).  The output row
    subtracts them again with weights -w: C - K w - ... = 0 exactly."""
    F = act.F
    consts = [(float(z), float(t)) for z, t in zip(act.z, act.t) if t > 0 and is_pow2(float(t))]
    if not consts:
        raise ConstructionError(f"{act.name} on {F.name} takes no positive power of two (Condition 1 (c))")
    consts.sort(key=lambda bt: (abs(math.log2(bt[1])), abs(bt[0])))
    C = 2.0 ** F.e_max
    for k in range(0, F.e_max - F.e_min + 1):
        n = 2 ** k
        for b, K in consts:
            w = C / n / K
            if F.contains(w) and abs(w) * h_max <= float(F.Omega):
                return b, w, n, C
    raise ConstructionError(f"no absorbing constant fits upstream values up to {h_max!r} on {F.name}")


def construct_generic_one(act: "ActivationTable", F: Format, X, fv, Y, G, implementation, verify_result):
    """One point: every chain starts at its coordinate x_c (input weight w_1) and every hidden neuron sits on
    a pass state; coordinate c's chains realize the table G[0, :, c]."""
    d_in = X.shape[1]
    f0 = float(fv[0])
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    ch = Chains(act, ymax)
    terms = [(c, point_terms(F, Y, G[0, :, c], ch.prefixes)) for c in range(d_in)]
    R, comp, c_sat = ch.lengths([t for _, ts in terms for t in ts])
    planned = [(c, t, tau, p) for c, ts in terms
               for t, tau, p in plan_chains(ch, [(t, t.sign * t.d) for t in ts], c_sat, float(X[0, c]))]
    A = max([len(p[1]) for _, _, _, p in planned], default=0)
    built = [(c, ch.build(t, tau, R, comp, c_sat, *p, A)) for c, t, tau, p in planned]
    ch.check_built()
    n_hidden = max([len(b[1]) for _, b in built], default=1)
    L = n_hidden + 1
    bC, wC, nC, C = absorber(act, ymax)
    quarter = 2.0 ** (math.frexp(C)[1] - 1 - F.M - 2)
    for _, (ws, bs, zon, _) in built:
        out = mul_float(ws[-1], act.T(zon[-1]), F)
        if out is None or abs(out) > quarter:
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")
    B = Builder(L)
    cps = [(B.add(L - 1, [], bC), wC) for _ in range(nC)]
    ends = []
    for c, (ws, bs, zon, _) in built:
        cur = B.add(1, [(c, ws[0])], bs[0])
        for l in range(2, L):
            cur = B.add(l, [(cur, ws[l - 1])], bs[l - 1])
        ends.append((cur, ws[-1]))
    cms = [(B.add(L - 1, [], bC), -wC) for _ in range(nC)]
    B.add(L, cps + ends + cms, f0)
    net = B.network(F, implementation, act.name, d_in)
    claim = Claim(7, X, fv, Y, G)
    return finish(net, claim, {"pass derivative": act.d, "amplification": A, "compression": len(comp),
                                "threshold prefix": R}, verify_result)


def _chain_off_check(act: "ActivationTable", ws, zon, zoff, ymax: float, quarter: float, C: float) -> float:
    """A chain's forward outputs (on and off) small enough to be absorbed by C, and its backward value
    at |y| = ymax on the off states (where its gate is dead) finite; returns that |value|."""
    F = act.F
    for z in (zon[-1], zoff[-1]):
        out = mul_float(ws[-1], act.T(z), F)
        if out is None or abs(out) > quarter:
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")
    back = step_chain_scalar(ymax, [(w, act.dT(z)) for w, z in zip(reversed(ws[1:]), reversed(zoff))]
                             + [ws[0]], F)
    if not math.isfinite(back):
        raise ConstructionError("a chain's backward value overflows at the points where its gate is dead")
    return abs(back)


def _chains_off_back(act, uniq, by_len, ymax, back):
    """back[k] = the backward value of chain k at the off states (inf where a product overflows)."""
    F = act.F
    for n, ks in by_len.items():
        W = np.array([uniq[k][0] for k in ks], float)                   # (chains, n)
        Z = np.array([uniq[k][2] for k in ks], float)                   # (chains, n - 1)
        zu, inv = np.unique(Z, return_inverse=True)
        D = np.array([act.dT(float(z)) for z in zu.tolist()], float)[inv.reshape(Z.shape)]
        u = np.full(len(ks), float(ymax))
        bad = np.zeros(len(ks), bool)
        cols = []
        for j in range(n - 1, 0, -1):                                   # ws[j], then sigma~'(zoff[j - 1])
            cols += [W[:, j], D[:, j - 1]]
        cols.append(W[:, 0])
        for col in cols:
            one = col == 1.0
            if one.all():
                continue
            r = rn_mul(u, col, F)
            r = np.where(one, u, r)
            bad |= ~np.isfinite(r)
            u = np.where(bad, 0.0, r)
        back[ks] = np.where(bad, np.inf, u)


def _chains_off_check(act: "ActivationTable", built, ymax: float, quarter: float, C: float) -> dict:
    """``_chain_off_check`` of every chain of ``built`` [(gate, ws, bs, zon, zoff)], each distinct one once
    (chains from Chains.build's cache share their lists): {id(ws): |backward value at the off states|}.
    The backward values of chains of one length are computed together, factor by factor (the same
    rounded products, elementwise; a factor 1 is skipped as there: RN(u 1) = u); a chain whose product
    overflows at some factor is marked, as the scalar loop stops there.  The first failing chain, in
    the order of ``built``, raises ``_chain_off_check``'s error."""
    F = act.F
    uniq, at = [], {}
    for gi, ws, bs, zon, zoff in built:
        if id(ws) not in at:
            at[id(ws)] = len(uniq)
            uniq.append((ws, zon, zoff))
    back = np.full(len(uniq), np.nan)
    by_len = {}
    for k, (ws, zon, zoff) in enumerate(uniq):
        if len(zoff) == len(ws) - 1 and all(z is not None for z in zoff):
            by_len.setdefault(len(ws), []).append(k)
    try:
        _chains_off_back(act, uniq, by_len, ymax, back)
    except (CondcheckError, KeyError):                                  # the scalar loop raises where it should
        back[:] = np.nan
    out = {}
    for k, (ws, zon, zoff) in enumerate(uniq):
        for z in (zon[-1], zoff[-1]):
            o = mul_float(ws[-1], act.T(z), F)
            if o is None or abs(o) > quarter:
                raise ConstructionError(f"a chain's forward output {o!r} is too large to be absorbed by C = {C!r}")
        b = back[k]
        if b != b:                                                      # not computed together: the scalar loop
            b = _chain_off_check(act, ws, zon, zoff, ymax, quarter, C)
        elif not math.isfinite(b):
            raise ConstructionError("a chain's backward value overflows at the points where its gate is dead")
        out[id(ws)] = abs(b)
    return out


def construct_generic_gated(act: "ActivationTable", F: Format, X, fv, Y, G, implementation, verify_result):
    """Several points, any activation (docs/theorem7.md, "Several points, any activation").

    d >= 2: every gate is checked on every point (theorem5's exact gate sums, ``tuning.EXACT_GATE_POINTS``
    raised to N): the bounds theorem5 takes beyond 512 points combine each gating step's extremes over the
    whole domain, coordinate by coordinate, and on d = 2 sub-boxes of more than 512 points (a 32 x 32
    float8_e4m3 sub-box) they left a corner point without a gate.

    Where this construction fails, it is tried once more with *small gates* (boosts with any weight of
    the format, gates with the smallest weights that reach a pass state, ``_construct_generic_gated_points``);
    tried only there, so every network the first attempt builds stays as it was.  When both fail, the
    first attempt's error is raised, followed by the second's where it differs."""
    from ..theorem5 import tuning

    def attempt(small_gates: bool):
        if X.shape[1] >= 2 and X.shape[0] > tuning.EXACT_GATE_POINTS:
            with tuning.overridden({"EXACT_GATE_POINTS": X.shape[0]}):
                return _construct_generic_gated_points(act, F, X, fv, Y, G, implementation, verify_result,
                                                       small_gates)
        return _construct_generic_gated_points(act, F, X, fv, Y, G, implementation, verify_result, small_gates)

    try:
        return attempt(False)
    except ConditionFailure:
        raise
    except ConstructionError as first:
        try:
            return attempt(True)
        except ConstructionError as second:
            if str(second) == str(first):
                raise first from None
            raise ConstructionError(f"{first} (with small gates: {second})") from None


def _construct_generic_gated_points(act: "ActivationTable", F: Format, X, fv, Y, G, implementation, verify_result,
                                    small_gates: bool = False):
    """``construct_generic_gated`` once.  ``small_gates``: the steps' boosts try every weight of the format
    (theorem5's wide boosts), not only the powers of two, and every gate (its probe too) takes the smallest
    gating weights that put it on a pass state rather than the pass state farthest from L.  Why: on a
    narrow format a step's on values can sit in a shallow lobe of sigma~ next to L that no power-of-two
    boost leaves, and a gate far from L needs gating weights whose product with its backward value
    overflows (gelu on float6_e3m2fn: docs/theorem7.md, "Small gates")."""
    N = X.shape[0]
    dim = X.shape[1]
    d = act.d
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    ch = Chains(act, ymax)
    # one unit per (point, coordinate): its own gates, chains and pass paths to that coordinate
    units = [(i, cc) for i in range(N) for cc in range(dim)]
    per_unit = [point_terms(F, Y, G[i, :, cc], ch.prefixes) for i, cc in units]
    all_terms = [t for ts in per_unit for t in ts]
    R, comp, c = ch.lengths(all_terms)
    gt = Gating(act, X, implementation, wide_boosts=small_gates)
    kit = gt.kit
    plans, cover, pos = pass_plans(act)
    col = {v: j for j, v in enumerate(pos.tolist())}

    # gate states: pass states far from L (the first chain neuron then tells the gate's on value from L
    # with a small weight), |sigma~| <= Omega / 4
    far = np.abs(np.array([act.T(z) for z in act.pass_z]) - act.L)
    okg = np.abs(np.array([act.T(z) for z in act.pass_z])) <= float(F.Omega) / 4
    gate_targets = [float(z) for z in act.pass_z[okg][np.argsort(-far[okg], kind="stable")]]

    # groups: each term goes to the first plan that carries its |d| exactly and keeps the gate's backward
    # value lam |d| d times the gating weights (probed: the point's gate without its pass input) below
    # Omega / 4 (at the point the gating steps are dead, but the product must stay finite)
    lams = np.array([p[0] for p in plans])

    def pass_forward(i, cc, plan):
        """The pass path of point i to coordinate cc under a plan, on every point (None where a value
        overflows)."""
        lam, a_g, a3, a2, w_s, n_src, _ = plan
        xi = float(X[i, cc])
        try:
            b_s, z_s, _ = act.relay_bias(mul_float(w_s, xi, F))
            S = kit.T(kit.row([(w_s, X[:, cc])], b_s))
            c2, z2, _ = act.relay_bias(float(kit.row([(a2, S[i:i + 1])] * n_src, 0.0)[0]))
            P2 = kit.T(kit.row([(a2, S)] * n_src, c2))
            c3, z3, _ = act.relay_bias(float(kit.mul(a3, P2[i])))
            P3 = kit.T(kit.row([(a3, P2)], c3))
            kit.row([(a_g, P3)], 0.0)
        except (ConstructionError, CondcheckError):
            return None
        return b_s, c2, c3, P3

    groups = []                                    # (point, coordinate, plan index, [terms], pass forward)
    probes = {}
    for (i, cc), ts in zip(units, per_unit):
        if i not in probes:
            try:
                probe, _, _ = gt.ctx.find_gate(i, None, gate_targets, small_first=small_gates)
                probes[i] = max([abs(b) for b in probe] + [1.0])
            except CondcheckError:
                probes[i] = 1.0
        bprobe = probes[i]
        byplan, fwd, cands = {}, {}, {}
        for t in ts:
            if abs(t.d) not in cands:          # the plans for |d| (a function of |d| and the probe only)
                cands[abs(t.d)] = np.flatnonzero(cover[:, col[abs(t.d)]]
                                                 & (lams * abs(t.d) * d * bprobe <= float(F.Omega) / 4)).tolist()
            chosen = None
            for k in cands[abs(t.d)]:
                if k not in fwd:
                    fwd[k] = pass_forward(i, cc, plans[k])
                if fwd[k] is not None:
                    chosen = k
                    break
            if chosen is None:
                raise ConstructionError(f"no pass path carries the gradient {t.d!r} exactly without overflow "
                                        f"({act.name}, point {point_text(X[i])}, gating weight {bprobe!r})")
            byplan.setdefault(chosen, []).append(t)
        for k in sorted(byplan):
            groups.append((i, cc, k, byplan[k], fwd[k]))

    # pass paths and gates
    gates = []
    for i, cc, k, ts, (b_s, c2, c3, P3) in groups:
        lam, a_g, a3, a2, w_s, n_src, psign = plans[k]
        xi = point_text(X[i])
        betas, gamma, preG = gt.ctx.find_gate(i, (a_g, P3), gate_targets, small_first=small_gates)
        if float(preG[i]) not in act.pass_set:
            raise ConstructionError("internal: the gate is not on a pass state")   # pragma: no cover
        gmax = max(abs(t.d) for t in ts) * lam * d
        bmax = max([abs(b) for b in betas] + [0.0])
        if gmax * bmax > float(F.Omega):
            raise ConstructionError(f"point {xi}: the gate's backward value {gmax!r} times its gating weight "
                                    f"{bmax!r} overflows")
        gates.append(dict(i=i, cc=cc, plan=plans[k], terms=ts, b_s=b_s, c2=c2, c3=c3, betas=betas, gamma=gamma,
                          Gz=float(kit.T(preG[i]))))

    # chains after each gate
    chains = []
    for gi, g in enumerate(gates):
        lam, psign = g["plan"][0], g["plan"][6]
        items = [(t, t.sign * t.d * lam * psign) for t in g["terms"]]
        chains += [[gi, t, tau, p] for t, tau, p in plan_chains(ch, items, c, g["Gz"], act.L)]
    A = max([len(p[3][1]) for p in chains], default=0)
    built = []
    for gi, t, tau, p in chains:
        ws, bs, zon, zoff = ch.build(t, tau, R, comp, c, *p, A)
        built.append((gi, ws, bs, zon, zoff))
    ch.check_built()
    n_chain = max([len(b[2]) for b in built], default=1)
    L = 4 + n_chain + 1
    L = max(L, 7)
    bC, wC, nC, C = absorber(act, ymax)
    quarter = 2.0 ** (math.frexp(C)[1] - 1 - F.M - 2)
    # at the other points every chain runs on its off states: finite, absorbed, and the backward sum
    # that reaches the (dead) gate finite
    off_sum = {}
    seen = _chains_off_check(act, built, ymax, quarter, C)
    for gi, ws, bs, zon, zoff in built:
        off_sum[gi] = off_sum.get(gi, 0.0) + seen[id(ws)]
    if off_sum and max(off_sum.values()) > float(F.Omega):
        raise ConstructionError("the backward sum at a dead gate may overflow")
    if any(len(b[2]) != L - 5 for b in built):
        raise ConstructionError("internal: a chain does not end in layer L-1")             # pragma: no cover

    # values: relayed boosts, value gates at L-2, V' at L-1
    n_rel = (L - 3) - 3
    maps, vctx = gt.relayed(n_rel)
    vbr = []                                       # (branch, first of its point?)
    for i in range(N):
        if fv[i] != 0:
            vbr += [(br, j == 0) for j, br in enumerate(branches_for_value(vctx, i, float(fv[i]), ymax, F))]

    # ---- assemble -----------------------------------------------------------------------------------------
    B = Builder(L)
    const, st = gt.const, gt.st
    sep = [B.add(1, [(s.coord, s.w)], s.b) for s in gt.steps]
    kap_col = {}
    for s in gt.steps:
        b, _ = const.pick(s.kappa)
        if b not in kap_col:
            kap_col[b] = B.add(1, [], b)
    levels = sorted({k for s in gt.steps for k in range(s.k0, s.K + 1)})
    chain_col = {}
    for k in levels:
        b, K = const.pick(math.ldexp(1 + 2.0 ** -F.M, k))
        chain_col[k] = (B.add(1, [], b), B.add(1, [], b), K)
    src = []
    for g in gates:
        w_s, n_src = g["plan"][4], g["plan"][5]
        src.append([B.add(1, [(g["cc"], w_s)], g["b_s"]) for _ in range(n_src)])
    # layer 2: steps (separator, kappa, chain constants in increasing k, bias z_dead), P2
    stp = []
    for i, s in enumerate(gt.steps):
        b, K = const.pick(s.kappa)
        ins = [(sep[i], s.s), (kap_col[b], s.kappa / K)]
        for k in range(s.k0, s.K + 1):
            cc = math.ldexp(1 + 2.0 ** -F.M, k)
            ins += [(chain_col[k][0], cc / chain_col[k][2]), (chain_col[k][1], -cc / chain_col[k][2])]
        stp.append(B.add(2, ins, st.z_dead))
    p2 = [B.add(2, [(j, g["plan"][3]) for j in src[gi]], g["c2"]) for gi, g in enumerate(gates)]
    # layer 3: boosts, P3
    bst = [B.add(3, [(stp[i], s.boost_a)], s.boost_c) for i, s in enumerate(gt.steps)]
    p3 = [B.add(3, [(p2[gi], g["plan"][2])], g["c3"]) for gi, g in enumerate(gates)]
    # layer 4: gates
    gcol = []
    for gi, g in enumerate(gates):
        ins = [(bst[k], b) for k, b in zip(sorted(gt.gating(g["i"])), g["betas"])] + [(p3[gi], g["plan"][1])]
        gcol.append(B.add(4, ins, g["gamma"]))
    # the output row sums layer L-1 in index order: +C neurons, chain ends, -C neurons, value outputs
    cps = [(B.add(L - 1, [], bC), wC) for _ in range(nC)]
    # chains: first neuron in layer 5, reading its gate
    # (all chains have L - 5 neurons, checked above: one block of relays per layer, in chain order, the
    # same neurons at the same indices as adding them chain by chain)
    ends = []
    if built:
        Wm = np.array([b[1] for b in built], float)          # (chain, L - 4): input weight .. output weight
        Bm = np.array([b[2] for b in built], float)          # (chain, L - 5)
        cur = B.add_block(5, [gcol[b[0]] for b in built], Wm[:, 0], Bm[:, 0])
        for l in range(6, L):
            cur = B.add_block(l, cur, Wm[:, l - 5], Bm[:, l - 5])
        ends = list(zip(cur.tolist(), Wm[:, -1].tolist()))
    # relayed boosts: layers 4 .. L-3
    rel = list(bst)
    for r, layer in enumerate(maps):
        rel = [B.add(4 + r, [(rel[i], a)], cc) for i, (a, cc) in enumerate(layer)]
    cms = [(B.add(L - 1, [], bC), -wC) for _ in range(nC)]
    vends = []
    for br, first in vbr:
        if first:
            src_rel = {k: rel[k] for k in br.gating}
        else:
            # a further part of the same value reads its own copies of the relays: at its point the
            # relays are dead and their backward sums would otherwise add up the parts' values
            src_rel = {}
            for k in br.gating:
                cur = bst[k]
                for r, layer in enumerate(maps):
                    a, cc = layer[k]
                    cur = B.add(4 + r, [(cur, a)], cc)
                src_rel[k] = cur
        v = B.add(L - 2, [(src_rel[k], b) for k, b in zip(br.gating, br.beta)], br.gamma)
        a, cc = br.post[0]
        v = B.add(L - 1, [(v, a)], cc)
        vends.append((v, br.out_weight))
    B.add(L, cps + ends + cms + vends, 0.0)
    net = B.network(F, implementation, act.name, dim)
    claim = Claim(7, X, fv, Y, G)
    return finish(net, claim, {"pass derivative": d, "separator-step-boost": 3, "gate": 1, "amplification": A,
                                "compression": len(comp), "threshold prefix": R, "gates": len(gates)}, verify_result)
