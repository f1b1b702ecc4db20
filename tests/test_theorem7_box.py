"""Theorem 7 on many points (the float8 box, d = 1) and in two dimensions (grids, d = 2).

The constructor verifies with the sparse interpreter (condcheck.interpreters.sparse); these tests check its
verdicts independently: the exact rational interpreter on small cases, the dense vectorized one on a
sample of points of the box networks (its cost grows with points x y x width, so not on all of them).
The targets are computed here, from their definitions, by exact rational rounding."""
from fractions import Fraction

import numpy as np
import pytest

from condcheck.formats import get_format
from condcheck.netfile import Claim
from condcheck.rounding import round_fraction
from condcheck.interpreters import get_interpreter
from condcheck.targets import full_box, random_odd_tables
from condcheck.theorem7 import ConstructionError, TargetError, construct_theorem7
from condcheck.verify import verify

ACTS = ["relu", "elu", "gelu", "swish", "sigmoid", "tanh"]


def _H(act, F):
    from condcheck.check import check_activation
    return float(check_activation(act, F).constants["H_sigma"])


def _rn(F, q) -> float:
    """RN_F of a rational, saturated at +-Omega (a target beyond the range is clipped: still a value)."""
    Om = Fraction(float(F.Omega))
    q = max(-Om, min(Om, Fraction(q)))
    return float(round_fraction(q, F))


def _upstream(F, act):
    Y = F.values()
    return Y[np.abs(Y) <= _H(act, F)]


def _family(F, X, Y, name, seed=0):
    """Odd targets g*(x, y) of one family, exact: k(x) y, k(x) y |y|, sign(y) c(x), a step in |y|."""
    rng = np.random.default_rng(seed)
    V = F.values()
    small = V[(np.abs(V) <= 4) & (V != 0)]
    k = rng.choice(small, len(X))
    c = rng.choice(V, len(X))
    t = rng.choice(np.abs(Y[Y != 0]), len(X))
    G = np.zeros((len(X), len(Y)))
    for i in range(len(X)):
        for j, y in enumerate(Y.tolist()):
            if name == "linear":
                G[i, j] = _rn(F, Fraction(float(k[i])) * Fraction(y))
            elif name == "quadratic":
                G[i, j] = _rn(F, Fraction(float(k[i])) * Fraction(y) * abs(Fraction(y)))
            elif name == "sign":
                G[i, j] = float(np.sign(y)) * float(c[i])
            elif name == "step":
                G[i, j] = float(np.sign(y)) * (float(c[i]) if abs(y) >= t[i] else float(k[i]))
    return rng.choice(V, len(X)), G


def _dense_sample(res, n=3, seed=0):
    """Re-check n points of the claim (every y) with the dense interpreter (independent of the sparse one)."""
    c = res.claim
    idx = np.sort(np.random.default_rng(seed).choice(len(c.points), min(n, len(c.points)), replace=False))
    sub = Claim(7, c.points[idx], c.values[idx], c.upstream, c.gradients[idx])
    again = verify(res.network, sub, method="dense")
    assert again.ok, again.summary()
    assert again.gradient_checks == len(idx) * len(c.upstream)


# ---- default suite: small, exact ---------------------------------------------------------------------------
def test_sparse_interpreter_equals_exact_on_a_theorem7_network():
    """A gated tanh network (4 points): the sparse interpreter's values and gradients equal the exact
    rational interpreter's, bit for bit, on every point and a spread of y: both ends, zero and two
    between (the exact interpreter takes about 0.2 s a gradient here; dead chains skipped)."""
    F = get_format("float8_e4m3")
    X = np.array([[-5.0], [0.0], [0.125], [3.0]])
    Y = _upstream(F, "tanh")
    f, G = random_odd_tables(F, X, Y, 5)
    res = construct_theorem7("tanh", F, X, f, G, upstream=Y)
    v, g = get_interpreter("sparse").evaluate(res.network, X, np.broadcast_to(Y, (len(X), len(Y))))
    for n in range(len(X)):
        val, pre = res.network.forward_exact(X[n].tolist())
        assert float(val) == v[n] == f[n]
        for k in np.linspace(0, len(Y) - 1, 5).astype(int):
            want = float(res.network.gradient_exact(X[n].tolist(), Y[k], pre)[0])
            assert want == g[n, k, 0] == G[n, k]


def test_d2_grid_exact_interpreter():
    """d = 2: a 2 x 2 grid, two tables (one per coordinate), checked by the exact rational interpreter."""
    F = get_format("float8_e4m3")
    X = np.array([(u, v) for u in (-1.0, 0.5) for v in (-2.0, 3.0)])
    Y = np.array([-2.0, -0.25, -2.0 ** -9, 0.0, 2.0 ** -9, 0.25, 2.0])
    f, G = random_odd_tables(F, X, Y, 2, per_coordinate=True)
    assert G.shape == (4, 7, 2) and (G[:, :, 0] != G[:, :, 1]).any()
    res = construct_theorem7("tanh", F, X, f, G, upstream=Y)
    assert res.network.input_dim == 2
    again = verify(res.network, res.claim, method="exact")
    assert again.ok and again.gradient_checks == 28, again.summary()


def test_d2_bad_tables_are_refused():
    F = get_format("float8_e4m3")
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    Y = np.array([-1.0, 0.0, 1.0])
    with pytest.raises(TargetError, match=r"expected \(2, 3, 2\)"):
        construct_theorem7("tanh", F, X, [0.0, 0.0], np.zeros((2, 3)), upstream=Y)
    G = np.zeros((2, 3, 2))
    G[1, 2, 1] = 1.0                                   # g*(x, 1) != -g*(x, -1) in coordinate 2
    with pytest.raises(TargetError, match=r"x = \(1\.0, 0\.0\), y = -1\.0"):
        construct_theorem7("tanh", F, X, [0.0, 0.0], G, upstream=Y)
    with pytest.raises(TargetError, match="outside the box"):
        construct_theorem7("tanh", F, [[0.0, 128.0]], [0.0], np.zeros((1, 3, 2)), upstream=Y)


def test_tanh_32_box_points_every_y():
    """32 points of the float8_e4m3 box x every |y| <= H_sigma: built, verified (sparse), and three
    points re-checked by the dense interpreter."""
    F = get_format("float8_e4m3")
    B = full_box("tanh", F, 1)
    X = B[np.sort(np.random.default_rng(1).choice(len(B), 32, replace=False))]
    Y = _upstream(F, "tanh")
    f, G = random_odd_tables(F, X, Y, 1)
    res = construct_theorem7("tanh", F, X, f, G, upstream=Y)
    assert res.verification.ok and res.verification.gradient_checks == 32 * len(Y)
    assert res.depth <= res.paper_bound
    _dense_sample(res)


# ---- slow: the full box, every activation, both float8 formats ------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("act", ACTS)
def test_full_box_random_tables(act, fmt):
    F = get_format(fmt)
    X = full_box(act, F, 1)
    Y = _upstream(F, act)
    f, G = random_odd_tables(F, X, Y, 0)
    if (act, fmt) == ("sigmoid", "float8_e5m2"):
        # its box is not distinguishable (theorem5 refuses it too): sigma~(w x + b) maps -2^-8 and the
        # next value to one output for every (w, b); the refusal names the pair
        with pytest.raises(ConstructionError, match=r"distinguishability fails.*-0\.00390625"):
            construct_theorem7(act, F, X, f, G, upstream=Y)
        from condcheck.targets import separable_part
        X = separable_part(act, F, X)
        assert 150 < len(X) < len(full_box(act, F, 1))
        f, G = random_odd_tables(F, X, Y, 0)
    res = construct_theorem7(act, F, X, f, G, upstream=Y)
    assert res.verification.ok and res.verification.gradient_checks == len(X) * len(Y)
    assert res.depth <= res.paper_bound
    _dense_sample(res, 2)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["linear", "quadratic", "sign", "step", "random1", "random2"])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
def test_full_box_target_families(act, family, fmt):
    F = get_format(fmt)
    X = full_box(act, F, 1)
    if (act, fmt) == ("sigmoid", "float8_e5m2"):         # its box is not distinguishable (see above)
        from condcheck.targets import separable_part
        X = separable_part(act, F, X)
    Y = _upstream(F, act)
    if family.startswith("random"):
        f, G = random_odd_tables(F, X, Y, int(family[-1]))
    else:
        f, G = _family(F, X, Y, family)
    res = construct_theorem7(act, F, X, f, G, upstream=Y)
    assert res.verification.ok and res.verification.gradient_checks == len(X) * len(Y)


@pytest.mark.slow
@pytest.mark.parametrize("act", ["tanh", "gelu"])
def test_d2_eight_by_eight_grid(act):
    """d = 2 on an 8 x 8 grid spread over the float8_e4m3 box, every |y| <= H_sigma, a table per
    coordinate."""
    F = get_format("float8_e4m3")
    b = full_box(act, F, 1)[:, 0]
    g = b[np.linspace(0, len(b) - 1, 8).round().astype(int)]
    X = np.array([(u, v) for u in g for v in g])
    Y = _upstream(F, act)
    f, G = random_odd_tables(F, X, Y, 0, per_coordinate=True)
    res = construct_theorem7(act, F, X, f, G, upstream=Y)
    assert res.verification.ok and res.verification.gradient_checks == 64 * len(Y)
    assert res.network.input_dim == 2
    _dense_sample(res, 2)


def test_sigmoid_box_edges_large_gradients():
    """sigmoid with both box edges +-64 in the domain: the source weight must be 1 (w_s x + b_s finite at
    both edges), so |g| = 144, 240 need four sources carrying g/4 (a pass plan with n_src = 4)."""
    F = get_format("float8_e4m3")
    V = F.values()
    Y = V[np.abs(V) <= 4]
    X = np.array([[-64.0], [0.0], [64.0]])
    pos = np.unique(np.abs(Y[Y != 0]))
    rng = np.random.default_rng(0)
    G = np.zeros((3, len(Y)))
    nz = Y != 0
    for i in range(3):
        t = rng.choice(V, len(pos))
        t[:3] = [-144.0, 240.0, -240.0]
        G[i, nz] = np.sign(Y[nz]) * t[np.searchsorted(pos, np.abs(Y[nz]))]
    res = construct_theorem7("sigmoid", F, X, [1.0, 2.0, -240.0], G, upstream=Y)
    again = verify(res.network, res.claim, method="dense")
    assert again.ok and again.gradient_checks == 3 * len(Y), again.summary()
