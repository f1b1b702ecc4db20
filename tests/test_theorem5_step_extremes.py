"""Steps built on four values (condcheck/theorem5/step_extremes.py) against steps built on their whole
rows: every field of every step the same, and most steps decided by the four values."""
import math

import numpy as np
import pytest

import condcheck.theorem5 as t5
from condcheck.targets import box_sample, distinguishable_sample, random_targets
from condcheck.theorem5 import chunks, step_rounds as sr
from condcheck.theorem5.build import Build
from condcheck.theorem5.step_extremes import MonotoneRuns, SeparatorRows
from theorem5_helpers import assert_same_network


def _build(act, fmt, X):
    f, h, g = random_targets(fmt, X, 0, 0.25)
    return Build(act, fmt, X, f, h, g, "exact", False, None, "auto", False)


def _steps(b, keys, compact):
    gen = lambda k, report: sr.step_rounds(b.kit, b.st, b.coord_vals, k, b.push_need, compact)
    return chunks.run_rounds([keys], gen, sr.agree_steps)[0]


def _bits(step):
    """Every field of a step, floats by their bits (-0 and +0 apart)."""
    out = {}
    for k, v in vars(step).items():
        if isinstance(v, float):
            v = (v, math.copysign(1.0, v))
        out[k] = v
    return out


def _domain(act, fmt, n):
    return distinguishable_sample(fmt, n, 1) if act == "sigmoid" else box_sample(act, fmt, 1, n, 1)


@pytest.mark.parametrize("act,fmt", [("gelu", "float16"), pytest.param("relu", "float16", marks=pytest.mark.slow),
                                     pytest.param("tanh", "float16", marks=pytest.mark.slow),
                                     ("sigmoid", "float16"), ("swish", "bfloat16"),
                                     pytest.param("elu", "bfloat16", marks=pytest.mark.slow)])
def test_four_values_build_every_step_as_its_whole_row_does(act, fmt, monkeypatch):
    b = _build(act, fmt, _domain(act, fmt, 400))
    keys = sr.all_keys(b.coord_vals)
    whole, values = _steps(b, keys, False)
    wholes = []
    first_build = sr._first_build

    def counted(*a, **k):
        wholes.append(a[4])
        return first_build(*a, **k)
    monkeypatch.setattr(sr, "_first_build", counted)
    four, none = _steps(b, keys, True)
    assert list(four) == list(whole)
    for key in keys:
        assert _bits(four[key]) == _bits(whole[key]), key
    assert all(v is None for v in none.values())
    # the fast path is the common one (the others fall back to the whole row)
    assert len(wholes) <= len(keys) // 10


def test_a_gating_step_is_dead_at_the_points_it_gates():
    b = _build("gelu", "float16", _domain("gelu", "float16", 200))
    steps, values = _steps(b, sr.all_keys(b.coord_vals), False)
    for zi in range(len(b.X)):
        for key in sr.gating_keys(b.coord_vals, b.coord_idx, zi):
            assert values[key][b.coord_idx[key[0]][zi]] == b.st.L


def test_monotone_runs_agree_with_a_scan_of_the_activation():
    b = _build("gelu", "float16", _domain("gelu", "float16", 8))
    runs = MonotoneRuns.of(b.kit)
    V = b.kit.fmt.values()
    t, _ = b.kit.R.value_array(V)
    rng = np.random.default_rng(0)
    for _ in range(300):
        i, j = sorted(rng.integers(0, len(V), 2))
        if rng.random() < 0.5:
            j = min(len(V) - 1, i + int(rng.integers(0, 40)))
        seg = t[i:j + 1]
        want = bool(np.all(np.diff(seg) >= 0) or np.all(np.diff(seg) <= 0))
        assert runs.monotone(float(V[i]), float(V[j])) == want, (V[i], V[j])


def test_separator_rows_keep_the_last_rows_only_and_give_a_dropped_row_s_extremes_again(monkeypatch):
    monkeypatch.setattr(SeparatorRows, "KEPT", 2)
    b = _build("sigmoid", "float16", _domain("sigmoid", "float16", 300))
    vals = b.coord_vals[0]
    rows = SeparatorRows(b.kit, vals)
    pairs = [(1.0, -0.5), (2.0, 0.25), (0.5, 1.0), (1.0, -0.5)]
    first = {}
    for w, bias in pairs:
        for gap in (1, 150, len(vals) - 1):
            for up in (True, False):
                n4, side = rows.representatives(w, bias, gap, up)
                n = b.kit.T_row([(w, vals)], bias)
                lo, hi = (n[:gap], n[gap:]) if up else (n[gap:], n[:gap])
                assert n4.tolist() == [lo.min(), lo.max(), hi.min(), hi.max()]
                assert side.tolist() == [False, False, True, True]
                first.setdefault((w, bias, gap, up), n4.view(np.int64).tolist())
                assert n4.view(np.int64).tolist() == first[(w, bias, gap, up)]
        assert len(rows.rows) <= 2
    assert list(rows.rows) == [(0.5, 1.0), (1.0, -0.5)]          # the first pair was dropped, then read again


def test_compact_steps_build_the_network_the_step_rows_build(monkeypatch):
    # a spread float16 sample whose gates take the bounds (more than EXACT_GATE_POINTS points)
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 64)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", 48)
    monkeypatch.setattr(t5.tuning, "EXACT_GATE_POINTS", 32)
    X = box_sample("gelu", "float16", 1, 96, 5)
    f, h, g = random_targets("float16", X, 5, 0.25)
    compact, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)
    monkeypatch.setattr("condcheck.theorem5.build.enumerated", lambda F: False)     # step rows kept
    rows, _ = t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)
    assert_same_network(compact, rows)


def test_side_bounds_of_a_gate_bound_its_sum_at_every_other_point(monkeypatch):
    # step rows kept (the exact sums at every point are computable) and the gates bounded by patterns
    monkeypatch.setattr(t5.tuning, "SPREAD_FROM", 64)
    monkeypatch.setattr(t5.tuning, "SPREAD_CHUNK_POINTS", 48)
    monkeypatch.setattr(t5.tuning, "EXACT_GATE_POINTS", 32)
    monkeypatch.setattr("condcheck.theorem5.build.enumerated", lambda F: False)
    sums = t5.context.Context._gate_sums
    checked = []

    def both(self, zi, gating, B, extra):
        at_z, hi_o, lo_o, bad = sums(self, zi, gating, B, extra)
        assert self.side_bounds
        cols = [(B[:, k:k + 1], self.U_X[i][None, :]) for k, i in enumerate(gating)]
        if extra is not None:
            cols.append((np.full((len(B), 1), extra[0]), np.asarray(extra[1], float)[None, :]))
        allx, over = self._rowsum(len(B), cols)
        ok = ~bad & ~over
        others = np.delete(allx, zi, axis=1)
        assert (others[ok] <= hi_o[ok, None]).all() and (others[ok] >= lo_o[ok, None]).all()
        assert np.array_equal(at_z[ok], allx[ok, zi])
        checked.append(int(ok.sum()))
        return at_z, hi_o, lo_o, bad
    monkeypatch.setattr(t5.context.Context, "_gate_sums", both)
    X = box_sample("gelu", "float16", 1, 96, 5)
    f, h, g = random_targets("float16", X, 5, 0.25)
    t5.construct_theorem5("gelu", "float16", X, f, h, g, jobs=1)
    assert len(checked) > 100 and sum(checked) > 1000
