"""relu's own Theorem 7 construction (d = 1, exact implementation): saturating indicator chains on
relays whose biases keep the pre-activation on the smallest positive value, one point alone or several
behind two-sided gates with value ladders (docs/theorem7.md, "relu's own construction").
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from ..constructors.errors import ConstructionError
from ..formats import Format, get_format
from ..netfile import Claim
from ..network import Layer, Network
from ..ops import add_float, mul_float
from .assemble import Builder, Theorem7Network, finish
from .chains import chain, compression_weight, point_terms, rn_add, saturation_length, threshold_prefixes


@lru_cache(maxsize=None)
def _all_values(name: str) -> np.ndarray:
    return get_format(name).values()


def _smallest_positive_bias(P: float, fmt: Format) -> tuple[float, float]:
    """(b, z): the bias b making z = RN(P + b) the smallest positive value reachable."""
    return _spb_cached(fmt.name, float(P))


@lru_cache(maxsize=None)
def _spb_cached(name: str, P: float) -> tuple[float, float]:
    fmt = get_format(name)
    B = _all_values(name)
    Z = rn_add(np.full_like(B, P), B, fmt)
    ok = np.isfinite(Z) & (Z > 0)
    if not ok.any():
        raise ConstructionError(f"no bias makes the pre-activation {P!r} positive")   # pragma: no cover
    zmin = Z[ok].min()
    cand = np.flatnonzero(ok & (Z == zmin))
    b = B[cand[np.argmin(np.abs(B[cand]))]]
    return float(b), float(zmin)


def _decompose(d: float, fmt: Format) -> tuple[float, int]:
    """|d| = s * m * 2^K with m = |w_1| in [1, 2) a value of the format and K >= 0."""
    s = float(fmt.smallest_subnormal)
    N = abs(d) / s                                   # an integer: every value is a multiple of s
    K = int(math.floor(math.log2(N)))
    m = N / 2.0 ** K
    if not fmt.contains(m):
        raise ConstructionError(f"coefficient {d!r}: mantissa {m!r} is not a value of {fmt.name}")  # pragma: no cover
    return m, K


def _amplify(z: float, K: int, F: Format):
    """(weights, biases, last forward value): relays multiplying the backward value by 2^K in all, each
    weight the largest power of two whose product with the forward value z stays finite; each bias puts
    the pre-activation on the smallest reachable positive value."""
    amps, biases, rest = [], [], K
    while rest > 0:
        k = rest
        while k > 0 and (mul_float(2.0 ** k, z, F) is None or not F.contains(2.0 ** k)):
            k -= 1
        if k == 0:
            raise ConstructionError(f"cannot amplify past forward value {z!r}")       # pragma: no cover
        b, z = _smallest_positive_bias(mul_float(2.0 ** k, z, F), F)
        amps.append(2.0 ** k)
        biases.append(b)
        rest -= k
    return amps, biases, z


def _chain_lengths(terms, prefixes: dict, ymax: float, F: Format) -> tuple[int, int]:
    """(R, n_comp): the longest threshold chain of the terms, and the compression layers that bring the
    largest chain output (at |y| = ymax) down to the smallest subnormal."""
    R = max([len(prefixes[t.threshold]) for t in terms] + [1])
    n_comp = 0
    for t in terms:
        top = chain(np.array([ymax]), prefixes[t.threshold], F)[0]
        n_comp = max(n_comp, saturation_length(abs(top), F))
    return R, n_comp


def construct_relu_one(F: Format, X, fv, Y, G, implementation, verify_result) -> "Theorem7Network":
    """One point x (d = 1): the paired saturating-indicator terms of its odd table G[0] (shape (1, K)), each
    a chain input weight -> amplification -> compression -> threshold prefix, every neuron a relay on the
    smallest positive pre-activation; absorbed by the constants C and -C (docs/theorem7.md)."""
    x0, f0 = float(X[0, 0]), float(fv[0])

    # ---- the odd table on the positive values v_1 < ... < v_n up to max|y| --------------------------------
    ymax = float(np.abs(Y).max()) if Y.size else 0.0
    prefixes = threshold_prefixes(F)
    terms = point_terms(F, Y, G[0], prefixes)

    h = compression_weight(F)
    R, n_comp = _chain_lengths(terms, prefixes, ymax, F)

    # amplification: sign(y) s -> (powers of two) -> w_1 = +-m; forward values decide the split
    plans = []
    for t in terms:
        m, K = _decompose(t.d, F)
        w1 = math.copysign(m, t.d) * t.sign
        P = mul_float(w1, x0, F)
        if P is None:
            raise ConstructionError(f"input weight {w1!r} times x = {x0!r} overflows")   # pragma: no cover
        b1, z = _smallest_positive_bias(P, F)
        amps, biases, z = _amplify(z, K, F)
        plans.append((w1, b1, amps, biases, z))
    A = max([len(p[2]) for p in plans], default=0)

    # layers (input -> output): 1 input weight, A amplification, n_comp compression, R prefix (reversed)
    L = 1 + A + n_comp + R
    if L < 2:
        L, A = 2, A + 1          # the zero table: still one hidden layer (for the constants)
    for t, (w1, b1, amps, abias, z) in zip(terms, plans):
        ws, bs = [w1], [b1]
        amps = amps + [1.0] * (A - len(amps))
        abias = abias + [0.0] * (A - len(abias))
        pre = list(prefixes[t.threshold]) + [1.0] * (R - len(prefixes[t.threshold]))
        back = pre + [h] * n_comp            # backward order after the output weight... (output first)
        fwd_rest = list(reversed(back))      # input -> output order of the remaining weights
        ws += amps
        bs += abias
        a = z
        for w in fwd_rest[:-1] if fwd_rest else []:
            P = mul_float(w, a, F)
            if P is None:
                raise ConstructionError("a relay's forward product overflows")            # pragma: no cover
            if w == 1.0 or (P > 0 and w == h):
                b, a = 0.0, P
            else:
                b, a = _smallest_positive_bias(P, F)
            ws.append(w)
            bs.append(b)
        ws.append(fwd_rest[-1] if fwd_rest else 1.0)   # the output weight (first backward factor)
        t.weights, t.biases = ws, bs
        t.last_value = a

    # constant neurons C for the absorbing output sum
    C = 2.0 ** F.e_max
    half_ulp = 2.0 ** (F.e_max - F.M - 1)
    for t in terms:
        out = mul_float(t.weights[-1], t.last_value, F)
        if out is None or abs(out) > half_ulp / 2:      # RN(C + t) = C for |t| <= ulp(C)/4 (C even)
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")

    n = len(terms)
    layers = []
    for l in range(1, L + 1):
        if l == 1:
            rows = n + (2 if L == 2 else 0)
            W = sp.lil_matrix((rows, 1))
            bias = np.zeros(rows)
            off = 1 if L == 2 else 0
            for j, t in enumerate(terms):
                W[j + off, 0] = t.weights[0]
                bias[j + off] = t.biases[0]
            if L == 2:
                bias[0] = bias[-1] = C
        elif l < L:
            rows = n + (2 if l == L - 1 else 0)
            cols = n + (2 if l - 1 == L - 1 else 0)
            W = sp.lil_matrix((rows, cols))
            bias = np.zeros(rows)
            off = 1 if l == L - 1 else 0
            for j, t in enumerate(terms):
                W[j + off, j] = t.weights[l - 1]
                bias[j + off] = t.biases[l - 1]
            if l == L - 1:
                bias[0] = bias[-1] = C
        else:
            W = sp.lil_matrix((1, n + 2))
            W[0, 0] = 1.0
            for j, t in enumerate(terms):
                W[0, j + 1] = t.weights[-1]
            W[0, n + 1] = -1.0
            bias = np.array([f0])
        layers.append(Layer(W.tocsr(), bias))
    net = Network(F, "relu", layers, implementation, 1)
    claim = Claim(7, X, fv, Y, G.reshape(1, -1, 1))
    return finish(net, claim, {"input": 1, "amplification": A, "compression": n_comp, "threshold prefix": R},
                   verify_result)


def construct_relu_gated(F: Format, X, fv, Y, G, implementation, verify_result) -> "Theorem7Network":
    """Several points x_1, ..., x_N (d = 1): one gated family of chains per point, one value neuron per point.

    Gradient chain of point x_i (input -> output): p = ReLU(x - pred(x_i)) and four q = ReLU(x - x_i) in
    layer 1; the gate ReLU(p - q - q - q - q + b) in layer 2 is live only at x_i (p is dead below x_i,
    p - 4q < 0 above it) and its weights are +-1, so at x_i the backward value d passes to p unchanged and
    to the dead q's without overflow.  Then a layer with the mantissa m of d, the amplification by powers
    of two, the compression by h, the threshold prefix and the signed output weight, all weights positive
    except the last: past the dead gate every forward value at another point is at most its value at x_i.
    Value of x_k: two clipped ladders (t_1 = min(t_0, T), t_(j+1) = min(2 t_j, T)) from t_0 = ReLU(+-(x - x_k)),
    dead at x_k and equal
    to T at every other point; V_k = ReLU(c_k - sum of n copies of the ladders' ends) with c_k = |f*(x_k)|
    from a constant neuron, n T >= c_k; relays carry V_k to the output with weight sign(f*(x_k)).  Backward
    through V_k only meets weights +-1 and dead ladders: zero gradient, no overflow.
    """
    N = X.shape[0]
    xs = X[:, 0].tolist()
    prefixes = threshold_prefixes(F)
    h = compression_weight(F)
    Om = float(F.Omega)
    ymax = float(np.abs(Y).max()) if Y.size else 0.0

    # gradient chains
    per_point = [point_terms(F, Y, G[i], prefixes) for i in range(N)]
    all_terms = [t for terms in per_point for t in terms]
    R, n_comp = _chain_lengths(all_terms, prefixes, ymax, F)
    plans = []
    for i, terms in enumerate(per_point):
        xi = xs[i]
        pred = float(F.next_down(xi))
        b_p = -pred
        gap = add_float(xi, b_p, F)
        for t in terms:
            m, K = _decompose(t.d, F)
            b_g, z = _smallest_positive_bias(gap, F)
            P = mul_float(m, z, F)
            b_m, z = _smallest_positive_bias(P, F)
            amps, abias, z = _amplify(z, K, F)
            plans.append((i, t, b_p, b_g, m, b_m, amps, abias, z))
    A = max([len(p[6]) for p in plans], default=0)
    chain_depth = 3 + A + n_comp + R            # layers of a gradient chain, output layer included

    # value ladders
    T = 2.0 ** math.floor(math.log2(Om / 4))
    J = 1
    for k in range(N):
        for j in range(N):
            if j != k:
                dlt = abs(add_float(xs[j], -xs[k], F))
                J = max(J, 1 + (math.ceil(math.log2(T / dlt)) if dlt < T else 0))
    value_depth = J + 3                          # t0, J stages, V, output
    L = max(chain_depth, value_depth, 4)
    pad = L - chain_depth                         # identity layers between amplification and compression

    B = Builder(L)
    C = 2.0 ** F.e_max
    cp = B.add(L - 1, [], C)                     # the output sum runs C, chain ends, -C, value relays
    # layer 1 order: every p (pairs, point by point), then the q's, then the ladders
    p_idx = [B.add(1, [(0, 1.0)], pl[2]) for pl in plans]
    q_idx = [[B.add(1, [(0, 1.0)], -xs[pl[0]]) for _ in range(4)] for pl in plans]
    ends = []
    for (i, t, b_p, b_g, m, b_m, amps, abias, z), p, qs in zip(plans, p_idx, q_idx):
        g = B.add(2, [(p, 1.0)] + [(q, -1.0) for q in qs], b_g)
        cur = B.add(3, [(g, m)], b_m)
        l = 3
        amps = amps + [1.0] * (A - len(amps))
        abias = abias + [0.0] * (A - len(abias))
        for w, b in zip(amps, abias):
            l += 1
            cur = B.add(l, [(cur, w)], b)
        a = z
        cur = B.relay(l, cur, l + pad)
        l += pad
        pre = list(prefixes[t.threshold]) + [1.0] * (R - len(prefixes[t.threshold]))
        fwd = list(reversed(pre + [h] * n_comp))
        for w in fwd[:-1]:
            l += 1
            P = mul_float(w, a, F)
            if w == 1.0 or (P > 0 and w == h):
                b, a = 0.0, P
            else:
                b, a = _smallest_positive_bias(P, F)
            cur = B.add(l, [(cur, w)], b)
        assert l == L - 1
        sgn = math.copysign(1.0, t.d) * t.sign
        ends.append((cur, sgn * fwd[-1], mul_float(fwd[-1], a, F)))
    cm = B.add(L - 1, [], C)
    for _, _, out in ends:
        if out is None or abs(out) > 2.0 ** (F.e_max - F.M - 2):
            raise ConstructionError(f"a chain's forward output {out!r} is too large to be absorbed by C = {C!r}")

    # value neurons
    vends = []
    for k in range(N):
        c = abs(float(fv[k]))
        if c == 0:
            continue
        n = max(1, math.ceil(c / T))
        # the constant comes first in V's sum (columns are summed in index order): c - T - T ... >= -T - T
        const = B.add(J + 1, [], c)
        lad_ends = []
        for sg in (1.0, -1.0):
            t0 = B.add(1, [(0, sg)], -sg * xs[k])
            prev = [(t0, None)]
            for j in range(1, J + 1):
                copies = n if j == J else 1
                # stage 1 clips t0 (up to 2^(e_max-1)) at T; later stages double: t_j = min(2^(j-1) t0, T)
                ins = [(prev[0][0], 1.0)] if j == 1 else [(prev[0][0], 2.0), (prev[0][1], -2.0)]
                cur = []
                for _ in range(copies):
                    a_ = B.add(j + 1, ins, 0.0)
                    b_ = B.add(j + 1, ins, -T)
                    cur.append((a_, b_))
                prev = cur
            lad_ends.append(prev)
        ins = [(const, 1.0)]
        for lad in lad_ends:
            for a_, b_ in lad:
                ins += [(a_, -1.0), (b_, 1.0)]
        v = B.add(J + 2, ins, 0.0)
        v = B.relay(J + 2, v, L - 1)
        vends.append((v, math.copysign(1.0, float(fv[k]))))

    out_in = [(cp, 1.0)] + [(e, w) for e, w, _ in ends] + [(cm, -1.0)] + vends
    B.add(L, out_in, 0.0)
    net = B.network(F, implementation)
    claim = Claim(7, X, fv, Y, G.reshape(N, -1, 1))
    return finish(net, claim, {"gate": 2, "mantissa": 1, "amplification": A, "padding": pad, "compression": n_comp,
                                "threshold prefix": R, "value ladder stages": J}, verify_result)
