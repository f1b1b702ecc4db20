"""The lookup tables of small formats agree with the exact array path on every pair of values."""
import numpy as np
import pytest

from condcheck.formats import get_format
from condcheck.op_tables import TABLE_LIMIT, op_tables
from condcheck.ops import add_array, mul_array


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
    monkeypatch.setattr(t5, "op_tables", lambda F: None)
    n2, _ = t5.construct_theorem5("relu", "float6_e3m2fn", X, f, h, g)
    assert len(n1.layers) == len(n2.layers)
    for a, b in zip(n1.layers, n2.layers):
        assert (a.weight != b.weight).nnz == 0 and np.array_equal(a.bias, b.bias)
