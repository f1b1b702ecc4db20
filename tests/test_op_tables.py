"""The lookup tables of small formats agree with the exact array path on every pair of values."""
import numpy as np
import pytest

from condcheck.formats import get_format
from condcheck.op_tables import TABLE_LIMIT, op_tables
from condcheck.ops import add_array, mul_array
from condcheck.separators import exhaustive as sx

def _without_tables(monkeypatch):
    """Switch the RN index tables off in every part of the Theorem 5 construction that reads them."""
    import importlib
    import pkgutil

    import condcheck.theorem5 as t5

    for info in pkgutil.iter_modules(t5.__path__):
        module = importlib.import_module(f"condcheck.theorem5.{info.name}")
        if hasattr(module, "op_tables"):
            monkeypatch.setattr(module, "op_tables", lambda F: None)


def _build_on_40_box_points(act, fmt):
    """A Theorem 5 construction (unverified) on 40 points spread over the d = 1 box, random:0 targets."""
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box, random_targets
    X = full_box(act, fmt, 1)
    X = X[np.linspace(0, len(X) - 1, 40).astype(int)]
    f, h, g = random_targets(fmt, X, 0, 0.25)
    t5.construct_theorem5(act, fmt, X, f, h, g, verify_result=False)


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float6_e2m3fn", "float4_e2m1fn", "b3_6"])
def test_every_sum_and_product_matches_the_exact_path(name):
    F = get_format(name)
    tb = op_tables(F)
    V = F.values()
    a, b = np.meshgrid(V, V, indexing="ij")
    for op, table_op in ((add_array, tb.add), (mul_array, tb.mul)):
        r, over = op(a, b, F)
        got = tb.value(table_op(tb.index(a), tb.index(b)))
        assert np.array_equal(np.isnan(got), over)
        assert np.array_equal(got[~over], r[~over])


@pytest.mark.parametrize("name", ["float8_e5m2", "float4_e2m1fn"])
def test_add_and_mul_read_flat_give_the_table_entries_for_every_broadcast_shape(name):
    tb = op_tables(get_format(name))
    rng = np.random.default_rng(2)
    for shape_i, shape_j in [((5,), (5,)), ((3, 1), (1, 7)), ((), (9,)), ((4, 6), (4, 6)), ((2, 1, 3), (4, 1))]:
        i = rng.integers(0, tb.over + 1, shape_i).astype(np.int16)     # (the overflow index included)
        j = rng.integers(0, tb.over + 1, shape_j).astype(np.int16)
        for op, table in ((tb.add, tb.add_table), (tb.mul, tb.mul_table)):
            got, want = op(i, j), table[i, j]
            assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)


def test_negative_zero_and_overflow_indices():
    F = get_format("float8_e4m3")
    tb = op_tables(F)
    assert tb.index(np.array([-0.0]))[0] == tb.index(np.array([0.0]))[0]
    assert tb.index(np.array([np.nan]))[0] == tb.over
    top = tb.index(np.array([float(F.max)]))
    assert tb.mul(top, top)[0] == tb.over                    # Omega * Omega overflows
    assert tb.add(tb.over, tb.index(np.array([0.0])))[0] == tb.over   # overflow propagates
    assert np.array_equal(tb.value(tb.neg(tb.index(F.values()))), -F.values())


def test_a_value_outside_the_format_is_refused():
    from condcheck.errors import CondcheckError

    tb = op_tables(get_format("float8_e4m3"))
    with pytest.raises(CondcheckError, match="not a value of float8_e4m3"):
        tb.index(np.array([0.3]))


def test_large_formats_get_no_tables():
    assert op_tables(get_format("float16")) is None
    assert get_format("float16").count_finite() > TABLE_LIMIT


def test_theorem5_builds_the_same_network_with_and_without_tables(monkeypatch):
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box, random_targets

    X = full_box("relu", "float6_e3m2fn", 1)
    f, h, g = random_targets("float6_e3m2fn", X, 0, 0.25)
    n1, _ = t5.construct_theorem5("relu", "float6_e3m2fn", X, f, h, g)
    _without_tables(monkeypatch)
    n2, _ = t5.construct_theorem5("relu", "float6_e3m2fn", X, f, h, g)
    assert len(n1.layers) == len(n2.layers)
    for a, b in zip(n1.layers, n2.layers):
        assert (a.weight != b.weight).nnz == 0 and np.array_equal(a.bias, b.bias)


# ---- the constructor's searches on the index tables equal the rounded path ------------------------------
@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("act", ["gelu", "sigmoid", "selu"])      # (selu: T overflows at some values)
def test_separator_table_on_indices_equals_the_rounded_table(monkeypatch, fmt, act):
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box

    F = get_format(fmt)
    kit = t5.Kit(act, F, "exact")
    vals = np.unique(full_box(act, F, 1)[:, 0])
    got = sx.separator_table(kit, vals)
    _without_tables(monkeypatch)
    want = sx.separator_table(kit, vals)
    for a, b in zip(got, want):
        assert a.shape == b.shape and np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
def test_quantizer_chains_on_indices_equal_the_rounded_chains(monkeypatch, fmt):
    import math

    import condcheck.theorem5 as t5

    F = get_format(fmt)
    kit = t5.Kit("relu", F, "exact")
    V = F.values()
    rng = np.random.default_rng(0)
    cases = [V, -V, V[V > 0], np.array([0.0, -0.0, float(F.max)])] + [rng.choice(V, 50) for _ in range(4)]
    k0s = range(F.e_min, F.e_max + 1)
    got = {(i, k0): t5.steps.quantizer_chains(kit, v, k0) for i, v in enumerate(cases) for k0 in k0s}
    _without_tables(monkeypatch)
    for (i, k0), g in got.items():
        w = t5.steps.quantizer_chains(kit, cases[i], k0)
        assert list(g) == list(w)
        for K in w:
            assert np.array_equal(g[K], w[K]) and np.array_equal(np.signbit(g[K]), np.signbit(w[K]))
    assert any(len(g) > 2 for g in got.values()) and math.isfinite(float(F.max))


@pytest.mark.parametrize("act, fmt", [("gelu", "float8_e4m3"), ("tanh", "float8_e5m2"), ("sigmoid", "float8_e4m3")])
def test_gate_search_on_indices_equals_the_rounded_gate_search(monkeypatch, act, fmt):
    """Every call of the index-space gate search during a construction returns the same gate (weights,
    bias and pre-activations, bit for bit) or the same error as the rounded search."""
    import condcheck.theorem5 as t5

    calls = {"found": 0, "refused": 0}
    indexed = t5.context.Context._gate_indexed

    def rounded(self, zi, extra, targets, small_first):
        tables, self.tables = self.tables, None
        try:
            return t5.context.Context.find_gate(self, zi, extra, targets, small_first)
        except t5.ConstructionError as e:
            return str(e)
        finally:
            self.tables = tables

    def check(self, zi, gating, B, extra, targets, tv, small_first):
        want = rounded(self, zi, extra, targets, small_first)
        try:
            got = indexed(self, zi, gating, B, extra, targets, tv, small_first)
        except t5.ConstructionError as e:
            assert str(e) == want
            calls["refused"] += 1
            raise
        assert got is not None and not isinstance(want, str)
        assert got[0] == want[0] and got[1] == want[1] and np.signbit(got[1]) == np.signbit(want[1])
        assert np.array_equal(got[2], want[2]) and np.array_equal(np.signbit(got[2]), np.signbit(want[2]))
        calls["found"] += 1
        return got

    monkeypatch.setattr(t5.context.Context, "_gate_indexed", check)
    _build_on_40_box_points(act, fmt)
    assert calls["found"] > 40


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
def test_kit_row_on_indices_equals_the_rounded_row(fmt):
    """Kit.row's table path against the rounded products and sums: every (weight, value) pair of the
    format in one- and two-term rows with several biases, bit for bit (signs of zeros included), and the
    same error on the first overflow."""
    import condcheck.theorem5 as t5

    F = get_format(fmt)
    fast, slow = t5.Kit("relu", F, "exact"), t5.Kit("relu", F, "exact")
    slow._tables = None
    V = F.values()
    W, X = np.meshgrid(V, V, indexing="ij")
    W, X = W.ravel(), X.ravel()
    prod, over = mul_array(W, X, F)
    W, X = W[~over], X[~over]                       # the pairs whose product is finite
    rng = np.random.default_rng(1)
    assert fast.tables is not None
    for bias in [0.0, 1.0, -1.0, float(V[1]), float(V[-2]), float(rng.choice(V))]:
        for terms in ([(W, X)], [(W, X), (0.5, X)], [(X, 1.0), (W, X), (-2.0, X)], [(float(V[-1]), X), (W, X)]):
            try:
                want = slow.row(terms, bias)
            except t5.ConstructionError as e:
                with pytest.raises(t5.ConstructionError, match=str(e)):
                    fast.row(terms, bias)
                continue
            got = fast.row(terms, bias)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    # rows that do not overflow: the pairs split into chunks, each compared
    for lo in range(0, len(W), 4096):
        terms = [(W[lo:lo + 4096], X[lo:lo + 4096])]
        got, want = fast.row(terms, 0.5), slow.row(terms, 0.5)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    # a -0 bias takes the rounded path (its zeros may be -0)
    z = np.array([-0.0, 0.0])
    assert np.array_equal(np.signbit(fast.row([(z, 1.0)], -0.0)), np.signbit(slow.row([(z, 1.0)], -0.0)))


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("act", ["relu", "selu", "sigmoid"])
def test_kit_activation_of_a_row_on_indices_equals_the_activation_of_the_rounded_row(fmt, act):
    """Kit.T_row (T read at the row's table indices) against T of the rounded row: every (weight,
    value) pair with several biases, bit for bit, and the same error where a product, a sum or T
    overflows (selu~ overflows on float8_e4m3)."""
    import condcheck.theorem5 as t5

    F = get_format(fmt)
    fast, slow = t5.Kit(act, F, "exact"), t5.Kit(act, F, "exact")
    slow._tables = None
    V = F.values()
    W, X = (a.ravel() for a in np.meshgrid(V, V, indexing="ij"))
    keep = ~mul_array(W, X, F)[1]
    errors = 0
    for lo in range(0, int(keep.sum()), 2048):
        w, x = W[keep][lo:lo + 2048], X[keep][lo:lo + 2048]
        for terms, bias in (([(w, x)], 0.0), ([(w, x)], float(V[-3])), ([(x, 2.0), (w, x)], -1.0), ([(w, x)], -0.0)):
            try:
                want = slow.T(slow.row(terms, bias))
            except t5.ConstructionError as e:
                errors += 1
                with pytest.raises(t5.ConstructionError, match=str(e)):
                    fast.T_row(terms, bias)
                continue
            got = fast.T_row(terms, bias)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    assert errors > 0                             # (the large biases overflow some sums)


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("act", ["gelu", "tanh"])
def test_separator_extremes_on_indices_equal_the_extremes_of_the_rounded_table(monkeypatch, fmt, act):
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box

    F = get_format(fmt)
    kit = t5.Kit(act, F, "exact")
    vals = np.unique(full_box(act, F, 1)[:, 0])
    got = sx.separator_extremes(kit, vals)
    _without_tables(monkeypatch)
    want = sx.extremes(sx.separator_table(kit, vals))
    for i in (0, 1, 3, 4, 5, 6):
        assert got[i].dtype == want[i].dtype and np.array_equal(got[i], want[i])
    assert sx.choose_steps(got, len(vals)) == sx.choose_steps(want, len(vals))


def _choose_steps_reference(ext, n_vals, chunk=16):
    """separators.exhaustive.choose_steps as first written (the spreads of every candidate): the reference for the
    version that computes them only on the candidates that separate some gap of a chunk."""
    W, B, Tv, pmin, pmax, smin, smax = ext
    out = {}
    for start in range(1, n_vals, chunk):
        stop = min(start + chunk, n_vals)
        gaps = np.arange(start, stop)
        at, below = slice(start, stop), slice(start - 1, stop - 1)
        for up in (True, False):
            if up:
                on_min, on_max, d_min, d_max = smin[at], smax[at], pmin[below], pmax[below]
            else:
                on_min, on_max, d_min, d_max = pmin[below], pmax[below], smin[at], smax[at]
            best = [None] * len(gaps)
            for s, lo_on, hi_on, edge in ((1.0, on_min, on_max, d_max), (-1.0, -on_max, -on_min, -d_min)):
                ok = lo_on > edge
                spread = np.where(ok, (hi_on - edge) / np.where(ok, lo_on - edge, 1), np.inf)
                idx = np.argmin(spread, axis=1)
                for k in np.flatnonzero(ok.any(axis=1)):
                    i = int(idx[k])
                    sp = spread[k, i]
                    if best[k] is None or sp < best[k][0]:
                        best[k] = (sp, s, i, float(edge[k, i]))
            for k, gap in enumerate(gaps):
                if best[k] is None:
                    out[(int(gap), up)] = None
                else:
                    _, s, i, edge = best[k]
                    out[(int(gap), up)] = (float(W[i]), float(B[i]), s, -edge)
    return out


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("act", ["gelu", "sigmoid", "relu"])
def test_choose_steps_equals_the_full_spread_reference(fmt, act):
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box

    F = get_format(fmt)
    kit = t5.Kit(act, F, "exact")
    for vals in (np.unique(full_box(act, F, 1)[:, 0]), F.values()[::3]):
        ext = sx.separator_extremes(kit, vals)
        got, want = sx.choose_steps(ext, len(vals)), _choose_steps_reference(ext, len(vals))
        assert list(got) == list(want)
        for key in want:
            assert (got[key] is None) == (want[key] is None)
            if want[key] is not None:
                assert got[key] == want[key] and np.signbit(got[key][3]) == np.signbit(want[key][3])


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
@pytest.mark.parametrize("act", ["gelu", "sigmoid", "tanh", "relu"])
def test_kit_activation_by_index_equals_the_rounded_activation(fmt, act):
    """Kit.T / Kit.dT through the table indices against sigma~'s own array path on every value (and
    -0), in 1-D and 2-D shapes, including the overflow refusal."""
    import condcheck.theorem5 as t5

    F = get_format(fmt)
    kit = t5.Kit(act, F, "exact")
    V = np.append(F.values(), -0.0)
    for derivative, f, arr in ((False, kit.T, kit.R.value_array), (True, kit.dT, kit.R.derivative_array)):
        want, over = arr(V)
        fin = V[~over]
        for z in (fin, fin[:len(fin) // 2 * 2].reshape(2, -1)):
            got = f(z)
            w, o = arr(z.ravel())
            assert got.shape == z.shape and not o.any()
            assert np.array_equal(got.ravel(), w) and np.array_equal(np.signbit(got.ravel()), np.signbit(w))
        if over.any():
            with pytest.raises(t5.ConstructionError, match="overflows"):
                f(V)
    with pytest.raises(Exception, match="0.3"):
        kit.T(np.array([0.3, 1.0]))
    with pytest.raises(Exception, match="finite"):
        kit.T(np.array([np.nan, 1.0]))


@pytest.mark.parametrize("act, fmt", [("relu", "float8_e4m3"), ("gelu", "float8_e5m2"), ("tanh", "float8_e5m2"),
                                      ("sigmoid", "float8_e4m3")])
def test_two_point_map_search_on_indices_equals_the_rounded_search(monkeypatch, act, fmt):
    """Every call of the index-space search for (a, c) mapping v_off onto a zero state and v_on onto a
    target, during a construction, returns the rounded search's pair (the sign of a zero c included),
    or its None."""
    import condcheck.theorem5 as t5

    calls = {"found": 0, "none": 0}
    indexed = t5.context.Context._map_two_indexed

    def check(self, v_off, v_on, zs, on_target):
        got = indexed(self, v_off, v_on, zs, on_target)
        assert got is not NotImplemented
        want = t5.context.Context._map_two_rounded(self, v_off, v_on, zs, on_target)
        assert got == want
        if got is not None:
            assert np.signbit(got[1]) == np.signbit(want[1])
            assert t5.context.Context._map_two_rounded(self, v_off, v_on, zs, on_target, choices=True) == [got]
        calls["found" if got is not None else "none"] += 1
        return got

    monkeypatch.setattr(t5.context.Context, "_map_two_indexed", check)
    _build_on_40_box_points(act, fmt)
    assert calls["found"] > 20


def test_two_point_map_search_on_indices_equals_the_rounded_search_on_every_zero_state_and_target():
    """Off the construction's own calls: every live state as v_on's target and several v_off, v_on,
    including zeros of both signs."""
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box, random_targets

    seen = []
    orig = t5.context.Context._map_two_indexed

    def grab(self, *a):
        seen.append(self)
        return orig(self, *a)

    import pytest as _pt
    mp = _pt.MonkeyPatch()
    mp.setattr(t5.context.Context, "_map_two_indexed", grab)
    try:
        X = full_box("elu", "float8_e4m3", 1)[::8]
        f, h, g = random_targets("float8_e4m3", X, 1, 0.25)
        t5.construct_theorem5("elu", "float8_e4m3", X, f, h, g, verify_result=False)
    finally:
        mp.undo()
    ctx = seen[0]
    zs = ctx.zero_states[np.argsort(np.abs(ctx.zero_states))][:16]
    V = ctx.F.values()
    targets = np.unique(ctx.st.t[ctx.st.z > ctx.st.z_dead])[::7]
    n = 0
    for v_off in (0.0, -0.0, float(V[3]), float(V[len(V) // 2 + 5]), float(ctx.st.L)):
        for v_on in (-0.0, float(V[-4]), float(V[len(V) // 2 + 9]), float(V[len(V) // 3])):
            for tgt in targets:
                got = t5.context.Context._map_two_indexed(ctx, v_off, v_on, zs, float(tgt))
                want = t5.context.Context._map_two_rounded(ctx, v_off, v_on, zs, float(tgt))
                assert got == want
                if got is not None:
                    assert np.signbit(got[1]) == np.signbit(want[1])
                    n += 1
    assert n > 10


@pytest.mark.parametrize("act, fmt", [("relu", "float8_e5m2"), ("tanh", "float8_e4m3")])
def test_remembered_reach_equals_the_search_on_every_base_including_signed_zeros(act, fmt):
    import condcheck.theorem5 as t5
    from condcheck.targets import full_box, random_targets

    seen = []
    orig = t5.context.Context._reach

    def grab(self, base):
        seen.append(self)
        return orig(self, base)

    mp = pytest.MonkeyPatch()
    mp.setattr(t5.context.Context, "_reach", grab)
    try:
        X = full_box(act, fmt, 1)[::6]
        f, h, g = random_targets(fmt, X, 3, 0.25)
        t5.construct_theorem5(act, fmt, X, f, h, g, verify_result=False)
    finally:
        mp.undo()
    ctx = seen[0]
    assert ctx.small_format
    for base in [-0.0] + ctx.F.values().tolist():
        for _ in range(2):                        # computed, then remembered
            got, want = ctx._reach(base), ctx._reach_search(base)
            assert got == want
            if got is not None:
                assert np.signbit(got[0]) == np.signbit(want[0]) and np.signbit(got[1]) == np.signbit(want[1])


def test_distinct_indices_by_a_mask_equal_numpy_unique():
    import condcheck.theorem5 as t5

    rng = np.random.default_rng(3)
    for n, size in [(249, 0), (249, 1), (249, 40), (249, 5000), (241, 241), (1025, 300)]:
        idx = rng.integers(0, n, size).astype(np.int16)
        got = t5.steps.distinct_indices(idx, n)
        assert np.array_equal(got, np.unique(idx)) and got.dtype.kind == "i"
    assert np.array_equal(t5.steps.distinct_indices(np.array([248, 0, 248], np.int16), 249), [0, 248])
