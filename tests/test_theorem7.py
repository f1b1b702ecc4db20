"""Theorem 7 (ReLU, one point): primitives checked on every y, and networks whose AD output is an
arbitrary odd table of the upstream y, verified exactly (the constructor verifies, the tests again)."""
from fractions import Fraction

import numpy as np
import pytest

from condcheck.formats import get_format
from condcheck.netfile import load_network, save_network
from condcheck.rounding import round_fraction
from condcheck.theorem7 import (ConstructionError, TargetError, chain, compression_weight, construct_theorem7,
                                positive_values, rn_mul, saturating_indicator, saturation_length,
                                subnormal_quantizer, threshold_prefixes, underflow_threshold)
from condcheck.verify import verify

SMALL = ["float4_e2m1fn", "float6_e3m2fn", "float8_e4m3"]
BUILT = ["float6_e3m2fn", "float8_e4m3"]


def _rne(q: Fraction) -> int:
    """Round a rational to the nearest integer, ties to even."""
    fl = q.numerator // q.denominator
    r = q - fl
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and fl % 2):
        return fl + 1
    return fl


# ---- primitives, every y ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SMALL)
def test_underflow_threshold_is_a_fixed_grid_rounding(name):
    F = get_format(name)
    s = F.smallest_subnormal
    Y = F.values()
    for k in range(0, F.e_max - F.e_min + F.M + 2):
        got = underflow_threshold(Y, k, F)
        for y, g in zip(Y.tolist(), got.tolist()):
            z = Fraction(y) / 2 ** k
            if abs(z) < Fraction(2) ** (F.e_min + 1):          # quantum s: the subnormal grid
                want = s * _rne(z / s) * 2 ** k
            else:                                              # y 2^-k is a normal value: exact
                want = Fraction(y)
            if abs(want) > F.Omega:                            # the grid point is beyond Omega
                assert g == np.copysign(np.inf, y), (name, k, y)
                continue
            assert Fraction(g) == want, (name, k, y)
        # zero exactly below (and at, ties to even) half the grid step s 2^k
        nz = got != 0
        assert np.isfinite(got).all() or k > F.e_max - F.e_min
        assert (nz == (np.abs(Y) > float(s) * 2.0 ** (k - 1))).all()


@pytest.mark.parametrize("name", SMALL)
def test_subnormal_quantizer(name):
    F = get_format(name)
    s = F.smallest_subnormal
    Y = F.values()
    for c in positive_values(F).tolist():
        got = subnormal_quantizer(Y, c, F)
        for y, g in zip(Y.tolist(), got.tolist()):
            exact = Fraction(y) * Fraction(c)
            if abs(exact) < Fraction(2) ** (F.e_min + 1):
                assert Fraction(g) == s * _rne(exact / s)
            elif abs(exact) <= F.Omega:
                assert Fraction(g) == round_fraction(exact, F)


@pytest.mark.parametrize("name", SMALL)
def test_absorption_by_a_power_of_two_constant(name):
    """RN(RN(C + t) - C) = 0 for |t| <= ulp(C)/4 (C = 2^e_max), and = RN(C + t) - C otherwise."""
    F = get_format(name)
    C = 2.0 ** F.e_max
    Y = F.values()
    r = rn_mul(np.ones_like(Y), Y, F)
    from condcheck.theorem7 import rn_add
    out = rn_add(rn_add(np.full_like(Y, C), r, F), np.full_like(Y, -C), F)
    small = np.abs(Y) <= 2.0 ** (F.e_max - F.M - 2)
    assert (out[small] == 0).all()
    assert (out[~small & (np.abs(Y) < C)] != 0).any()


@pytest.mark.parametrize("name", BUILT)
def test_every_positive_value_is_a_product_chain_threshold(name):
    F = get_format(name)
    Y = F.values()
    pos = positive_values(F)
    pref = threshold_prefixes(F)
    assert set(pref) == set(pos.tolist())
    for t, ch in pref.items():
        assert len(ch) <= 3
        assert all(0 < w <= 1 for w in ch)
        u = chain(Y, ch, F)
        assert ((u != 0) == (np.abs(Y) >= t)).all(), (name, t, ch)
        assert (np.sign(u) == np.sign(Y) * (np.abs(Y) >= t)).all()


@pytest.mark.parametrize("name", BUILT)
def test_saturating_indicator_every_threshold_every_y(name):
    F = get_format(name)
    s = float(F.smallest_subnormal)
    Y = F.values()
    h = compression_weight(F)
    assert 0.5 < h < 1 and float(F.next_down(h)) == 0.5
    for t, ch in threshold_prefixes(F).items():
        n = saturation_length(abs(chain(np.array([float(F.Omega)]), ch, F)[0]), F)
        ind = saturating_indicator(Y, ch, n, F)
        assert (ind == np.sign(Y) * s * (np.abs(Y) >= t)).all(), (name, t)
        # each product by h = 1/2 + 2^-(M+1) shrinks the range by about 1/h
        assert n <= np.ceil(np.log(float(F.Omega / F.smallest_subnormal)) / np.log(1 / h)) + 1


def test_float4_gaps_are_reported():
    """float4_e2m1fn: no value in (1/2, 1) (no compression weight), and threshold 2 is not a chain threshold."""
    F = get_format("float4_e2m1fn")
    with pytest.raises(ConstructionError, match="strictly between 1/2 and 1"):
        compression_weight(F)
    pref = threshold_prefixes(F, max_len=5)
    assert 2.0 not in pref and 1.5 in pref and 3.0 in pref
    Y = F.values()
    with pytest.raises(ConstructionError):
        construct_theorem7("relu", F, [[1.0]], [0.0], np.sign(Y))


# ---- networks -------------------------------------------------------------------------------------------
def _odd(F, fn):
    """Target table on every y: fn on y > 0 (a value of F), extended oddly, 0 at y = 0."""
    Y = F.values()
    pos = np.unique(np.abs(Y[Y != 0]))
    table = dict(zip(pos.tolist(), np.asarray(fn(pos), dtype=float).tolist()))
    G = np.array([np.sign(y) * table[abs(y)] if y != 0 else 0.0 for y in Y.tolist()])
    return Y, G


def _rn_clip(F, a):
    r, over = __import__("condcheck.ops", fromlist=["mul_array"]).mul_array(a, np.ones_like(a), F)
    return np.where(over, float(F.Omega), r)


def _build_and_check(F, x, fx, Y, G, exact=False):
    res = construct_theorem7("relu", F, [[x]], [fx], G, upstream=Y)
    assert res.verification.ok
    again = verify(res.network, res.claim, method="exact" if exact else "fast")
    assert again.ok, again.summary()
    assert again.gradient_checks == len(Y)
    assert res.depth <= res.paper_bound
    return res


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("k", [1.0, 0.75, -1.5, 0.0078125])
def test_linear_targets(name, k):
    F = get_format(name)
    Y, G = _odd(F, lambda v: _rn_clip(F, k * v))
    _build_and_check(F, 1.0, 2.0, Y, G)


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("k", [1.0, -0.25])
def test_quadratic_targets(name, k):
    F = get_format(name)
    Y, G = _odd(F, lambda v: _rn_clip(F, k * _rn_clip(F, v * v)))
    _build_and_check(F, -0.5, -3.0, Y, G)


@pytest.mark.parametrize("name", BUILT)
def test_sign_and_step_targets(name):
    F = get_format(name)
    c = float(F.values()[-3])
    Y, G = _odd(F, lambda v: np.full_like(v, c))
    _build_and_check(F, 0.0, 0.0, Y, G)
    a = 1.0
    Y, G = _odd(F, lambda v: np.where(v >= a, -c, 0.25))
    _build_and_check(F, 2.0, 1.0, Y, G)
    Y, G = _odd(F, lambda v: np.where(v >= a, float(F.Omega), float(F.smallest_subnormal)))
    _build_and_check(F, 2.0, 1.0, Y, G)


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_odd_tables(name, seed):
    F = get_format(name)
    rng = np.random.default_rng(seed)
    V = F.values()
    box = V[np.abs(V) <= 2.0 ** (F.e_max - 2)]
    Y, G = _odd(F, lambda v: rng.choice(V, len(v)))
    _build_and_check(F, float(rng.choice(box)), float(rng.choice(V)), Y, G)


def test_exact_interpreter_and_file_roundtrip(tmp_path):
    F = get_format("float6_e3m2fn")
    rng = np.random.default_rng(11)
    V = F.values()
    Y, G = _odd(F, lambda v: rng.choice(V, len(v)))
    res = _build_and_check(F, -4.0, 28.0, Y, G, exact=True)
    p = tmp_path / "t7.json"
    save_network(p, res.network, res.claim)
    net, claim = load_network(p)
    assert claim.theorem == 7 and claim.gradients.shape == (1, len(Y), 1)
    assert verify(net, claim).ok


def test_subset_of_upstream_values():
    F = get_format("float8_e4m3")
    Y = np.array([-3.0, -0.5, 0.0, 0.5, 3.0, 7.5])
    G = np.array([1.0, -240.0, 0.0, 240.0, -1.0, 0.001953125])
    _build_and_check(F, 0.25, -1.0, Y, G)


def test_non_odd_targets_are_refused_naming_x_and_y():
    F = get_format("float6_e3m2fn")
    Y, G = _odd(F, lambda v: v)
    G2 = G.copy()
    j = int(np.flatnonzero(Y == -2.0)[0])
    G2[j] = 2.0                                         # g(-2) = g(2) = 2
    with pytest.raises(TargetError, match=r"x = 1\.0, y = -2\.0"):
        construct_theorem7("relu", F, [[1.0]], [0.0], G2, upstream=Y)
    G3 = G.copy()
    G3[Y == 0] = 1.0
    with pytest.raises(TargetError, match="y = 0"):
        construct_theorem7("relu", F, [[1.0]], [0.0], G3, upstream=Y)
    with pytest.raises(TargetError, match="not a value"):
        construct_theorem7("relu", F, [[1.0]], [0.0], G * 1.1, upstream=Y)


def test_callable_targets():
    F = get_format("float6_e3m2fn")
    res = construct_theorem7("relu", F, [[0.5]], [1.0], lambda x, y: float(np.sign(y)) * 0.25)
    assert res.verification.ok and res.claim.upstream.shape == (len(F.values()),)


def test_depth_against_paper_bound_for_the_worst_table():
    """Every |y| carries a nonzero coefficient of maximal size: the deepest case."""
    for name, bound in (("float6_e3m2fn", 29), ("float8_e4m3", 47)):
        F = get_format(name)
        Y, G = _odd(F, lambda v: np.where(np.arange(len(v)) % 2, float(F.Omega), float(F.smallest_subnormal)))
        res = _build_and_check(F, 0.0, 0.0, Y, G)
        assert res.paper_bound == bound
        assert res.depth < bound


# ---- several points (d = 1): gates ------------------------------------------------------------------------
def _random_tables(F, X, seed):
    rng = np.random.default_rng(seed)
    V = F.values()
    G = np.array([_odd(F, lambda v: rng.choice(V, len(v)))[1] for _ in X])
    return F.values(), G, rng.choice(V, len(X))


def test_three_points_exact_interpreter():
    F = get_format("float6_e3m2fn")
    X = np.array([-4.0, 0.0625, 0.125])                 # the last two are adjacent values
    Y, G, fv = _random_tables(F, X, 5)
    keep = np.abs(Y) <= 1.0                             # a smaller claim: the exact interpreter is slow
    Y, G = Y[keep], G[:, keep]
    res = construct_theorem7("relu", F, X.reshape(-1, 1), fv, G, upstream=Y)
    again = verify(res.network, res.claim, method="exact")
    assert again.ok and again.gradient_checks == 3 * len(Y), again.summary()
    assert res.depth <= res.paper_bound


def test_full_float6_box_random_tables():
    F = get_format("float6_e3m2fn")
    V = F.values()
    X = V[np.abs(V) <= 2.0 ** (F.e_max - 2)]
    Y, G, fv = _random_tables(F, X, 0)
    # relu's own construction (the default goes generic beyond 64 points)
    res = construct_theorem7("relu", F, X.reshape(-1, 1), fv, G, generic=False)
    again = verify(res.network, res.claim)
    assert again.ok and again.points == len(X) == 41 and again.gradient_checks == 41 * 63
    assert res.depth == 20 and res.depth <= res.paper_bound


@pytest.mark.parametrize("seed", [0, 1])
def test_float8_points_near_zero_and_at_the_box_edges(seed):
    F = get_format("float8_e4m3")
    s = float(F.smallest_subnormal)
    X = np.array([-32.0, -s, 0.0, s, 2 * s, 30.0, 32.0])
    Y, G, fv = _random_tables(F, X, seed)
    fv[2] = float(F.Omega)
    fv[3] = -float(F.Omega)
    res = construct_theorem7("relu", F, X.reshape(-1, 1), fv, G)
    assert verify(res.network, res.claim).ok
    assert res.depth <= res.paper_bound


def test_domain_errors():
    F = get_format("float6_e3m2fn")
    Y = F.values()
    with pytest.raises(TargetError, match="outside the box"):
        construct_theorem7("relu", F, [[8.0]], [0.0], np.zeros(len(Y)))
    with pytest.raises(TargetError, match="twice"):
        construct_theorem7("relu", F, [[1.0], [1.0]], [0.0, 0.0], np.zeros((2, len(Y))))
    with pytest.raises(ConstructionError, match="Condition 1"):
        construct_theorem7("leaky_relu", "float8_e4m3", [[1.0]], [0.0], np.zeros(len(get_format("float8_e4m3").values())))


def test_float4_every_odd_table_is_reachable_with_sums():
    """float4_e2m1fn defeats the product-chain construction, not the backward arithmetic itself.

    The closure of {y} under y -> RN(u c) (c any nonzero value) and (u, v) -> RN(u + v) (the backward
    operations at a fixed x), five rounds deep, holds a point indicator at every positive value, and
    at most two further products give it every magnitude.  Point indicators are disjoint, so their sum
    is exact: every odd table of float4_e2m1fn is the AD output of some circuit of products and sums.
    (Not compiled into a network yet.)
    """
    from condcheck.ops import add_array, mul_array
    F = get_format("float4_e2m1fn")
    V = F.values()
    pos = V[V > 0]
    C = V[V != 0]
    seen = {tuple(pos)}
    frontier = [tuple(pos)]
    for _ in range(5):
        allS = np.array(sorted(seen))
        Fr = np.array(frontier)
        new = set()
        for c in C:
            r, o = mul_array(Fr, np.full_like(Fr, c), F)
            new.update(map(tuple, r[~o.any(1)]))
        for row in Fr:
            r, o = add_array(np.broadcast_to(row, allS.shape), allS, F)
            new.update(map(tuple, r[~o.any(1)]))
        new -= seen
        seen |= new
        frontier = list(new)
    S = np.array(sorted(seen))
    for k in range(len(pos)):
        onehot = np.all((S != 0) == (np.arange(len(pos)) == k), axis=1)
        assert onehot.any(), pos[k]
        reach = set(np.abs(S[onehot, k]).tolist())
        for _ in range(2):
            arr = np.array(sorted(reach))
            r, o = mul_array(arr[:, None], np.abs(C)[None, :], F)
            reach |= set(np.abs(r[~o]).tolist())
        assert reach - {0.0} == set(pos.tolist()), pos[k]


# ---- any activation (the generic construction) ------------------------------------------------------------
GENERIC = ["gelu", "swish", "elu", "tanh", "sigmoid"]


def _H(act, F):
    from condcheck.check import check_activation
    c = check_activation(act, F).constants
    return float(c["H_sigma"]), float(c["M_sigma"])


def _odd_upto(F, H, fn):
    """Every y with |y| <= H and an odd table from fn on the positive ones."""
    Y, G = _odd(F, fn)
    keep = np.abs(Y) <= H
    return Y[keep], G[keep]


def _rn_mul_exact(F, u, w):
    """RN_F(u w) by exact rational arithmetic (independent of the fast array path)."""
    return float(round_fraction(Fraction(u) * Fraction(w), F))


@pytest.mark.parametrize("act", GENERIC + ["relu"])
def test_pass_derivative_is_a_power_of_two_taken_on_live_states(act):
    from condcheck.theorem7.activation import ActivationTable
    F = get_format("float8_e4m3")
    a = ActivationTable(act, F, "exact")
    assert 0 < a.d <= 1 and np.log2(a.d) == np.round(np.log2(a.d))
    assert len(a.pass_z) > 0 and all(z > a.z_dead for z in a.pass_z)
    assert all(a.dT(z) == a.d for z in a.pass_z)
    # sigmoid' <= 1/4 everywhere, so its rounded derivative never reaches 1; the others reach 1
    assert a.d == (0.25 if act == "sigmoid" else 1.0)


@pytest.mark.parametrize("name, d, ymax", [("float8_e4m3", 1.0, 240.0), ("float8_e4m3", 0.25, 4.0),
                                           ("float8_e5m2", 0.25, 2.0)])
def test_generic_thresholds_and_saturation_exact_rationals(name, d, ymax):
    """Every threshold chain and the saturation, recomputed step by step with exact rationals."""
    from condcheck.theorem7 import generic_compression, generic_threshold_prefixes
    F = get_format(name)
    pos = positive_values(F)
    ys = pos[pos <= ymax]
    pref = generic_threshold_prefixes(F, d, ymax)
    assert set(pref) == set(ys.tolist())                     # every threshold up to ymax is reachable
    top = 0.0
    for t, ch in pref.items():
        out = []
        for y in ys.tolist():
            u = y
            for w in ch:
                u = _rn_mul_exact(F, _rn_mul_exact(F, u, w), d)
            out.append(u)
        out = np.array(out)
        assert ((out != 0) == (ys >= t)).all(), (t, ch)
        top = max(top, float(out.max()))
    ws, c = generic_compression(F.name, d, top)
    assert c > 0
    for u0 in pos[pos <= top].tolist():
        u = u0
        for w in ws:
            u = _rn_mul_exact(F, _rn_mul_exact(F, u, w), d)
        assert u == c, (u0, u)


def _check_generic(act, F, X, fv, Y, G):
    res = construct_theorem7(act, F, np.asarray(X, float).reshape(-1, 1), fv, G, upstream=Y)
    again = verify(res.network, res.claim)
    assert again.ok, again.summary()
    assert again.gradient_checks == len(X) * len(Y)
    assert res.network.activation == act
    assert res.depth <= res.paper_bound
    return res


@pytest.mark.parametrize("act", GENERIC)
def test_generic_one_point_linear_and_random(act):
    F = get_format("float8_e4m3")
    H, Ms = _H(act, F)
    Y, G = _odd_upto(F, H, lambda v: _rn_clip(F, 1.5 * v))
    _check_generic(act, F, [1.5], [2.0], Y, G)
    rng = np.random.default_rng(0)
    V = F.values()
    Y, G = _odd_upto(F, H, lambda v: rng.choice(V, len(v)))
    _check_generic(act, F, [-Ms], [float(F.Omega)], Y, G)          # the box edge, the largest value


@pytest.mark.slow
@pytest.mark.parametrize("act", GENERIC)
def test_generic_one_point_every_target_family(act):
    F = get_format("float8_e4m3")
    H, Ms = _H(act, F)
    V = F.values()
    s, Om = float(F.smallest_subnormal), float(F.Omega)
    fams = [lambda v: _rn_clip(F, -0.75 * v), lambda v: _rn_clip(F, 0.5 * _rn_clip(F, v * v)),
            lambda v: np.full_like(v, -Om), lambda v: np.where(v >= 1.0, 3.0, s)]
    fams += [(lambda r: (lambda v: r.choice(V, len(v))))(np.random.default_rng(seed)) for seed in (0, 1, 2)]
    for i, fn in enumerate(fams):
        for x in (Ms, -Ms, 0.0, s):
            Y, G = _odd_upto(F, H, fn)
            _check_generic(act, F, [x], [V[(i * 7 + 3) % len(V)]], Y, G)


def _random_points(F, act, n, seed):
    H, Ms = _H(act, F)
    V = F.values()
    rng = np.random.default_rng(seed)
    X = np.sort(rng.choice(V[np.abs(V) <= Ms], n, replace=False))
    Y = V[np.abs(V) <= H]
    from condcheck.targets import random_odd_tables
    fv, G = random_odd_tables(F, X.reshape(-1, 1), Y, seed)
    return X, fv, Y, G


@pytest.mark.parametrize("act", GENERIC)
def test_generic_three_points_random_tables(act):
    F = get_format("float8_e4m3")
    X, fv, Y, G = _random_points(F, act, 3, 0)
    _check_generic(act, F, X, fv, Y, G)


def test_generic_adjacent_points_exact_interpreter():
    """tanh, two adjacent values near 0 and a far one, checked by the exact rational interpreter."""
    F = get_format("float8_e4m3")
    s = float(F.smallest_subnormal)
    X = np.array([-5.0, s, 2 * s])
    rng = np.random.default_rng(4)
    V = F.values()
    Y = np.array([-2.0, -0.25, -s, 0.0, s, 0.25, 2.0])
    G = rng.choice(V, (3, 4))
    G = np.concatenate([-G[:, :0:-1], np.zeros((3, 1)), G[:, 1:]], axis=1)        # odd in y
    res = construct_theorem7("tanh", F, X.reshape(-1, 1), rng.choice(V, 3), G, upstream=Y)
    again = verify(res.network, res.claim, method="exact")
    assert again.ok and again.gradient_checks == 21, again.summary()


@pytest.mark.slow
@pytest.mark.parametrize("act", GENERIC)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generic_eight_points_random_tables(act, seed):
    F = get_format("float8_e4m3")
    X, fv, Y, G = _random_points(F, act, 8, seed)
    _check_generic(act, F, X, fv, Y, G)


@pytest.mark.slow
@pytest.mark.parametrize("act", GENERIC)
def test_generic_eight_points_target_families(act):
    F = get_format("float8_e4m3")
    H, Ms = _H(act, F)
    X, fv, Y, _ = _random_points(F, act, 8, 7)
    s, Om = float(F.smallest_subnormal), float(F.Omega)
    ks = _rn_clip(F, np.linspace(-2, 2, 8))
    for fn in (lambda v, k: _rn_clip(F, k * v), lambda v, k: _rn_clip(F, k * _rn_clip(F, v * v)),
               lambda v, k: np.full_like(v, k if k else s), lambda v, k: np.where(v >= 0.5, k, -Om)):
        G = np.array([_odd_upto(F, H, lambda v: fn(v, k))[1] for k in ks.tolist()])
        _check_generic(act, F, X, fv, Y, G)


def test_generic_upstream_beyond_H_sigma_is_refused():
    F = get_format("float8_e4m3")
    Y = np.array([-8.0, 0.0, 8.0])
    with pytest.raises(TargetError, match="H_sigma"):
        construct_theorem7("sigmoid", F, [[1.0]], [0.0], np.array([1.0, 0.0, -1.0]), upstream=Y)
    with pytest.raises(TargetError, match="outside the box"):
        construct_theorem7("gelu", F, [[64.0]], [0.0], np.array([1.0, 0.0, -1.0]), upstream=np.array([-1.0, 0, 1]))


@pytest.mark.slow
@pytest.mark.parametrize("act", GENERIC + ["relu"])
def test_float8_e5m2_one_point_and_three_points(act):
    F = get_format("float8_e5m2")
    H, Ms = _H(act, F)
    rng = np.random.default_rng(1)
    V = F.values()
    Y, G = _odd_upto(F, H, lambda v: rng.choice(V, len(v)))
    _check_generic(act, F, [-Ms], [float(F.Omega)], Y, G)
    X, fv, Y, G = _random_points(F, act, 3, 1)
    _check_generic(act, F, X, fv, Y, G)


def test_relu_through_the_generic_construction():
    """The generic construction does not depend on the activation's name: relu goes through it too."""
    F = get_format("float8_e4m3")
    X = np.array([-32.0, 0.0, float(F.smallest_subnormal), 5.0])
    from condcheck.targets import random_odd_tables
    V = F.values()
    fv, G = random_odd_tables(F, X.reshape(-1, 1), V, 3)
    res = construct_theorem7("relu", F, X.reshape(-1, 1), fv, G, upstream=V, generic=True)
    assert "pass derivative" in res.layers and res.layers["pass derivative"] == 1.0
    again = verify(res.network, res.claim)
    assert again.ok and again.gradient_checks == 4 * len(V)
    assert res.depth <= res.paper_bound


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_generic_zero_tables_and_zero_values(act):
    """No chain at all (g* = 0 everywhere), and points whose value is 0: still exact networks."""
    F = get_format("float8_e4m3")
    V = F.values()
    Y = V[np.abs(V) <= 2]
    X = np.array([[1.0], [-3.0], [0.0]])
    _check_generic(act, F, [1.0], [0.0], Y, np.zeros(len(Y)))
    _check_generic(act, F, X, [0.0, 5.0, 0.0], Y, np.zeros((3, len(Y))))
    G = np.zeros((3, len(Y)))
    G[1] = np.sign(Y) * 0.5
    _check_generic(act, F, X, [0.0, 0.0, 0.0], Y, G)


def _same_network(a, b):
    assert a.depth == b.depth
    for la, lb in zip(a.layers, b.layers):
        assert la.weight.shape == lb.weight.shape
        assert (la.weight != lb.weight).nnz == 0 and np.array_equal(la.bias, lb.bias)


@pytest.mark.parametrize("act", ["gelu", pytest.param("sigmoid", marks=pytest.mark.slow),
                                 pytest.param("elu", marks=pytest.mark.slow)])
def test_value_candidates_are_the_loop_s(act, monkeypatch):
    """The value branches' candidates computed for every (P, z0) at once are the one-(P, z0)-at-a-time
    loop's, in its order; when the batched computation raises, the loop is replayed (same network)."""
    import condcheck.theorem7.value_branches as vb
    F = get_format("float8_e4m3")
    X, fv, Y, G = _random_points(F, act, 5, 2)
    seen = []
    fast = vb._value_candidates

    def both(*args):
        a, b = list(fast(*args)), list(vb._value_candidates_loop(*args))
        assert a == b
        seen.append(len(a))
        return iter(a)

    monkeypatch.setattr(vb, "_value_candidates", both)
    res = _check_generic(act, F, X, fv, Y, G)
    assert seen and sum(seen) > 0

    def broken(*args):
        raise ConstructionError("forced")

    monkeypatch.setattr(vb, "_value_candidates", fast)
    monkeypatch.setattr(vb, "_value_blocks", broken)
    again = construct_theorem7(act, F, np.asarray(X, float).reshape(-1, 1), fv, G, upstream=Y)
    _same_network(res.network, again.network)


def test_chains_off_check_matches_the_scalar_loop(monkeypatch):
    """The off-state backward values of all chains at once equal ``_chain_off_check``'s, chain by chain
    (also when the batched computation raises: the scalar loop decides)."""
    import condcheck.theorem7.generic as gen
    F = get_format("float8_e4m3")
    X, fv, Y, G = _random_points(F, "swish", 4, 3)
    calls = []
    batched = gen._chains_off_check

    def both(act, built, ymax, quarter, C):
        out = batched(act, built, ymax, quarter, C)
        for gi, ws, bs, zon, zoff in built:
            assert out[id(ws)] == gen._chain_off_check(act, ws, zon, zoff, ymax, quarter, C)
        calls.append(len(built))
        return out

    monkeypatch.setattr(gen, "_chains_off_check", both)
    res = _check_generic("swish", F, X, fv, Y, G)
    assert calls and calls[0] > 0

    def broken(*args):
        raise ConstructionError("forced")

    monkeypatch.setattr(gen, "_chains_off_check", batched)
    monkeypatch.setattr(gen, "_chains_off_back", broken)
    again = construct_theorem7("swish", F, np.asarray(X, float).reshape(-1, 1), fv, G, upstream=Y)
    _same_network(res.network, again.network)
