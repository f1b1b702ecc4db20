"""Vectorized searches of the Theorem 5 constructor equal the loops they replaced."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import condcheck.theorem5 as t5
from condcheck.formats import get_format


def _scales_reference(F, g, w_g, d1, bmax, tries):
    """_Ctx._scales_search as first written: a loop over the (k2, k3) pairs and a sort of tuples."""
    _lg = t5._lg
    want = (_lg(4 * bmax) + _lg(g) - _lg(F.max_float) - _lg(w_g) - _lg(d1) + 3) if g and d1 else 0.0
    floor = abs(g) / float(F.max_float)
    base = abs(w_g * d1)
    pairs = []
    for k2 in range(-12, 13):
        for k3 in range(-12, 13):
            unsafe = base * 2.0 ** k2 / 2 < floor or base * 2.0 ** (k2 + k3) / 4 < floor
            pairs.append((unsafe, abs(k2 + k3 - want), abs(k2 - k3), k2, k3))
    pairs.sort()
    out = []
    for _, _, _, k2, k3 in pairs:
        for sg in (-1.0, 1.0):
            a2, a3 = math.ldexp(sg, k2), math.ldexp(1.0, k3)
            if t5._in(F, a2) and t5._in(F, a3):
                out.append((a2, a3))
        if len(out) >= tries:
            break
    return out


class _Probe:
    def __init__(self, F):
        self.F = F


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2", "float6_e3m2fn", "float16", "float64"])
def test_scales_search_equals_the_loop_over_pairs(fmt):
    F = get_format(fmt)
    V = F.values() if F.enumerable and F.count_finite() < 70000 else np.ldexp(1.25, np.arange(-40, 40))
    V = V[V != 0]
    rng = np.random.default_rng(0)
    probe = _Probe(F)
    for _ in range(200):
        g, w_g, d1 = (float(x) for x in rng.choice(V, 3))
        bmax = float(rng.choice([1.0, 2.0, 64.0, 0.125]))
        for d, tries in ((d1, 24), (0.0, 24), (d1, 5)):
            assert t5._Ctx._scales_search(probe, g, w_g, d, bmax, tries) == _scales_reference(F, g, w_g, d, bmax, tries)


@given(st.integers(1, 6), st.integers(1, 3000), st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_first_reached_picks_what_a_stable_argsort_of_the_unreached_picks(rows, cols, seed):
    rng = np.random.default_rng(seed)
    tv = rng.standard_normal(cols) * np.exp2(rng.integers(-20, 20, cols))
    fine = np.exp2(rng.integers(-22, 22, rows).astype(float))
    fine[rng.random(rows) < 0.2] = -np.inf               # a gate row whose sum is 0 reaches every target
    fine[rng.random(rows) < 0.3] = fine[0]               # rows share thresholds
    reach = np.abs(tv)[None, :] >= fine[:, None]
    k = min(64, cols)
    pick = np.argsort(~reach, axis=1, kind="stable")[:, :k]
    expected = np.where(np.take_along_axis(reach, pick, axis=1), tv[pick], np.nan)
    got = t5._first_reached(tv, fine, k, chunk=int(rng.integers(1, 2000)))
    assert got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=True)


@given(st.sampled_from(["bfloat16", "float16"]), st.integers(0, 2**32 - 1), st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_preimage_by_bisection_equals_the_pass_over_every_value(fmt, seed, n_factors):
    F = get_format(fmt)
    V = F.values()
    V = V[V != 0]
    rng = np.random.default_rng(seed)
    factors = [float(f) for f in rng.choice(V, n_factors)]
    image = t5._rn_products(F, rng.choice(V, 6), factors)
    S = np.concatenate([image[np.isfinite(image)], rng.choice(V, 2), [0.0, -0.0, np.inf, F.max_float]])
    expected = V[np.isin(t5._rn_products(F, V, factors), S)]
    got = t5._preimage_bisect(F, V, S, factors)
    assert np.array_equal(got, expected)
