"""The value f*(x) of a point in the generic construction: zero-gradient value branches (a value gate
live only at the point, then V' = sigma~(a V + c) mapping the dead value to a zero of sigma~ and the
live one to a power of two), split into powers of two where one branch's backward gain would
overflow; every backward product checked finite for |y| up to the largest upstream value.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..constructors.errors import ConstructionError
from ..constructors.kit import is_pow2
from ..errors import CondcheckError
from ..formats import Format
from ..ops import add_array, mul_array
from .chains import rn_mul, step_chain


def _value_parts(F: Format, f: float, cap: float):
    """Signed powers of two, each at most cap, summing to f left to right with every partial sum a value
    of the format (the binary digits of |f|, the ones above cap split into copies of cap); None if a
    partial sum is not a value or there would be more than 64 parts."""
    a, parts = abs(f), []
    while a > 0:
        p = 2.0 ** math.floor(math.log2(a))
        n = int(p // cap) if p > cap else 1
        parts += [min(p, cap)] * n
        a -= p
        if len(parts) > 64:
            return None
    acc = 0.0
    for p in parts:
        acc += p
        if not F.contains(acc):
            return None
    return [math.copysign(p, f) for p in parts]


def _check_value_branch(vctx, br, i: int, ymax: float, F: Format, pre=None) -> None:
    """Every product of a value branch's backward chain finite for |y| <= ymax (RN is monotone, so
    |y| = ymax decides): at its point y A, d4, a, d3, then each gating weight (the relays it reads are
    dead there); at the other points y A, d0, a (its gate is dead there).  All points at once."""
    kit = vctx.kit
    if pre is None:                  # the gate's pre-activations on every point (``find_gate`` returns them)
        pre = vctx.gate_row(i, sorted(vctx.gating(i)), br.beta, None, br.gamma)
    pre = np.asarray(pre, float)
    a, c = br.post[0]
    q = kit.add(kit.mul(a, kit.T(pre)), c)
    u = step_chain(np.full(pre.shape, ymax), [br.out_weight], F)
    u = rn_mul(rn_mul(u, kit.dT(q), F), a, F)
    ok = np.isfinite(u).all()
    if ok:
        ui = step_chain(u[i:i + 1], [float(kit.dT(pre[i]))], F)[0]
        ok = np.isfinite(ui) and all(np.isfinite(step_chain(np.array([ui]), [b], F)[0]) for b in br.beta)
    if not ok:
        raise ConstructionError(f"point {i + 1}: the value branch's backward value overflows for |y| = {ymax!r}")


def _value_candidates_finite(kit, F: Format, ymax: float, A: float, a, p_on, z0: float, pre_i: float, betas,
                             others: bool) -> np.ndarray:
    """Mask of the candidates (a, p_on) of a value branch whose backward chain stays finite for |y| <=
    ymax (``_check_value_branch`` when every other point is in the dead tail: there q = z0)."""
    u0 = rn_mul(np.array([ymax]), A, F)
    ok = np.ones(len(a), bool)
    if others:
        ok &= np.isfinite(rn_mul(rn_mul(u0, kit.dT(z0), F), a, F))
    ui = rn_mul(rn_mul(rn_mul(np.full(len(a), u0[0]), np.asarray(kit.dT(p_on), float), F), a, F),
                kit.dT(pre_i), F)
    ok &= np.isfinite(ui)
    for b in betas:
        ok &= np.isfinite(rn_mul(ui, b, F))
    return ok


def _value_candidates_loop(kit, st, F: Format, i: int, f: float, ymax: float, pre, betas, zeros, pows, A_all,
                           dead_same: bool):
    """The candidates (P, a, c) of ``_value_branch`` for one gate, in its order: every P, every zero z0
    of sigma~, the weights a (smallest |a| first) with c = z0 - RN(a L), RN(a L) + c = z0 (the dead value
    goes to z0) and sigma~(RN(a v) + c) = P for the live value v; at most 16 per (P, z0), after the
    finiteness screen (``_value_candidates_finite``) when the other points are all dead alike.  One
    (P, z0) at a time: the reference for ``_value_candidates``."""
    z = st.z
    v = float(kit.T(pre[i]))
    r_on, o1 = mul_array(A_all, np.full_like(A_all, v), F)
    r_off, o2 = mul_array(A_all, np.full_like(A_all, st.L), F)
    for P in pows:
        for z0 in zeros:
            c, oc = add_array(np.full_like(r_off, z0), -r_off, F)
            p_off, o3 = add_array(r_off, c, F)
            p_on, o4 = add_array(r_on, c, F)
            good = ~(o1 | o2 | oc | o3 | o4) & (p_off == z0) & np.isin(p_on, z)
            if good.any():
                good[good] = kit.T(p_on[good]) == P
            ks = np.flatnonzero(good)
            if ks.size and dead_same:
                ks = ks[_value_candidates_finite(kit, F, ymax, f / P, A_all[ks], p_on[ks], z0, float(pre[i]), betas,
                                                 len(pre) > 1)]
            for k in ks[:16]:
                yield P, float(A_all[k]), float(c[k])


def _value_candidates(kit, st, F: Format, i: int, f: float, ymax: float, pre, betas, zeros, pows, A_all,
                      dead_same: bool):
    """``_value_candidates_loop``'s candidates, the same ones in the same order, computed for every
    (P, z0) at once: the maps and sigma~ of every (z0, a) once (they do not depend on P), then one
    finiteness screen over the candidates of every P (each entry is computed by the same rounded
    operations as in the loop, elementwise).  Where any of these raises (an activation value or
    derivative that overflows), the loop is replayed instead, so errors surface where it raises them."""
    try:
        blocks = _value_blocks(kit, st, F, i, f, ymax, pre, betas, zeros, pows, A_all, dead_same)
    except CondcheckError:
        yield from _value_candidates_loop(kit, st, F, i, f, ymax, pre, betas, zeros, pows, A_all, dead_same)
        return
    for P, a, c in blocks:
        for ak, ck in zip(a.tolist(), c.tolist()):
            yield P, ak, ck


def _value_blocks(kit, st, F: Format, i: int, f: float, ymax: float, pre, betas, zeros, pows, A_all,
                  dead_same: bool) -> list:
    """[(P, weights a, biases c)] per (P, z0) in the loop's order (see ``_value_candidates``)."""
    v = float(kit.T(pre[i]))
    r_on, o1 = mul_array(A_all, np.full_like(A_all, v), F)
    r_off, o2 = mul_array(A_all, np.full_like(A_all, st.L), F)
    nz, nA = len(zeros), len(A_all)
    if not nz or not pows:
        return []
    Z0 = np.broadcast_to(np.asarray(zeros, r_off.dtype)[:, None], (nz, nA))
    c, oc = add_array(Z0, np.broadcast_to(-r_off[None, :], (nz, nA)), F)
    p_off, o3 = add_array(np.broadcast_to(r_off[None, :], (nz, nA)), c, F)
    p_on, o4 = add_array(np.broadcast_to(r_on[None, :], (nz, nA)), c, F)
    base = ~(o1[None, :] | o2[None, :] | oc | o3 | o4) & (p_off == Z0) & np.isin(p_on, st.z)
    Tp = np.full((nz, nA), np.nan)
    if base.any():
        Tp[base] = kit.T(p_on[base])
    blocks = [(P, zi, np.flatnonzero(base[zi] & (Tp[zi] == P))) for P in pows for zi in range(nz)]
    if dead_same:
        live = [(P, zi, ks) for P, zi, ks in blocks if ks.size]
        if live:
            A_e = np.concatenate([np.full(ks.size, f / P) for P, zi, ks in live])
            zi_e = np.concatenate([np.full(ks.size, zi) for P, zi, ks in live])
            k_e = np.concatenate([ks for P, zi, ks in live])
            ok = _value_candidates_finite_all(kit, F, ymax, A_e, A_all[k_e], p_on[zi_e, k_e],
                                              np.asarray(zeros, float)[zi_e], float(pre[i]), betas, len(pre) > 1)
            out, at = [], 0
            for P, zi, ks in blocks:
                n = ks.size
                ks = ks[ok[at:at + n]]
                at += n
                out.append((P, zi, ks))
            blocks = out
    return [(P, A_all[ks[:16]], c[zi, ks[:16]]) for P, zi, ks in blocks]


def _value_candidates_finite_all(kit, F: Format, ymax: float, A, a, p_on, z0, pre_i: float, betas,
                                 others: bool) -> np.ndarray:
    """``_value_candidates_finite`` with an output weight A and a dead-tail state z0 per candidate."""
    u0 = rn_mul(np.full(len(a), ymax), A, F)
    ok = np.ones(len(a), bool)
    if others:
        dz = {q: kit.dT(q) for q in set(np.asarray(z0).tolist())}
        ok &= np.isfinite(rn_mul(rn_mul(u0, np.array([dz[q] for q in np.asarray(z0).tolist()], float), F), a, F))
    ui = rn_mul(rn_mul(rn_mul(u0, np.asarray(kit.dT(p_on), float), F), a, F), kit.dT(pre_i), F)
    ok &= np.isfinite(ui)
    for b in betas:
        ok &= np.isfinite(rn_mul(ui, b, F))
    return ok


def _value_branch(vctx, i: int, f: float, ymax: float, F: Format):
    """A zero-gradient value branch of point i: the gate V = sigma~(sum beta relayed steps + gamma) (live at
    the point, dead elsewhere; theorem5's gate search), then V' = sigma~(a V + c) mapping the dead value L
    to a zero of sigma~ and V's live value to a power of two P, output weight A = f / P.  Candidates: a few
    gate states (far from L first: then a small |a| separates the live value from L), every P with
    f / P a value (the largest P first: a small A), every weight a (smallest |a| first); the first whose backward chain passes ``_check_value_branch`` exactly is taken."""
    kit, st = vctx.kit, vctx.st
    z, t, dt = st.z, st.t, st.dt
    live = (z > st.z_dead) & (t != st.L)
    zm = (t == 0) & np.isfinite(dt)
    zeros = list(z[zm][np.lexsort((np.abs(z[zm]), np.abs(dt[zm])))][:4])     # T' = 0 first, then near 0
    zeros += [q for q in z[zm][np.argsort(np.abs(z[zm]), kind="stable")][:4] if q not in zeros]
    pows = sorted({float(v) for v in t[live] if v > 0 and is_pow2(float(v)) and F.contains(f / float(v))},
                  reverse=True)
    okt = live & np.isfinite(t)
    targets = list(z[okt][np.lexsort((np.abs(dt[okt]), -np.abs(t[okt] - st.L)))])
    A_all = F.values()
    A_all = A_all[A_all != 0]
    A_all = A_all[np.argsort(np.abs(A_all), kind="stable")]
    err = "no gate"
    for _ in range(16):
        try:
            betas, gamma, pre = vctx.find_gate(i, None, targets, small_first=False)
        except CondcheckError as e:
            err = str(e)
            break
        targets.remove(float(pre[i]))
        # the other points sit in the dead tail (sigma~ = L there): their backward chains are all alike,
        # so the candidates can be screened at once (``_value_candidates_finite``); the chosen one is
        # still checked on every point
        dead_same = bool((np.asarray(kit.T(np.delete(pre, i)), float) == st.L).all())
        for P, a, c in _value_candidates(kit, st, F, i, f, ymax, pre, betas, zeros, pows, A_all, dead_same):
            br = SimpleNamespace(gating=sorted(vctx.gating(i)), beta=betas, gamma=gamma,
                                 post=[(a, c)], out_weight=f / P)
            try:
                _check_value_branch(vctx, br, i, ymax, F, pre)
            except CondcheckError as e:
                err = str(e)
                continue
            return br
    raise ConstructionError(f"point {i + 1}: no zero-gradient value branch for {f!r} ({err})")


def branches_for_value(vctx, i: int, f: float, ymax: float, F: Format) -> list:
    """The value f* of point i as one or more zero-gradient value branches (theorem5's value gate and V'
    map on the relayed boosts).  Where the backward gain of one branch, |f / P| and the factors behind it,
    would overflow for |y| <= ymax, f is split into powers of two of at most half, a quarter, ... of it
    (their left-to-right sum is exact): each branch then carries a smaller output weight.  One branch
    carrying f whole is tried first (output weight f / P: one gate search instead of one per bit)."""
    err = None
    try:
        return [_value_branch(vctx, i, f, ymax, F)]
    except CondcheckError as e:
        err = e
    cap = float("inf")
    for _ in range(F.M + 6):
        parts = _value_parts(F, f, cap)
        if parts is not None:
            try:
                # the gain check with a margin of 2: each product of the backward chain is rounded,
                # and a rounding up can push a product whose exact value fits just past Omega
                return [_value_branch(vctx, i, p, ymax, F) for p in parts]
            except CondcheckError as e:
                err = e
        cap = 2.0 ** (math.floor(math.log2(abs(f))) - 1) if cap == float("inf") else cap / 2
    raise ConstructionError(f"point {i + 1}: no split of the value {f!r} into zero-gradient branches fits upstream "
                            f"values up to {ymax!r} ({err})")
