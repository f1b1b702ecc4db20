"""The sparse interpreter's strategies do the work they are for (their numbers: tests/test_interpreters.py).

A fast strategy that silently fell back to a slower one would still give the right numbers; these tests
check that each one answers by itself where it should, and keeps its data small, on the networks it
was made for.
"""
import numpy as np
import pytest

from condcheck import kernels
from condcheck.formats import get_format
from condcheck.interpreters import get_interpreter

# the kernels on every thread of numba's pool (tests/conftest.py runs them on one under xdist)
pytestmark = [pytest.mark.skipif(not kernels.HAVE_NUMBA, reason="the sparse interpreter needs numba"),
              pytest.mark.usefixtures("every_compiled_thread")]


@pytest.fixture(scope="module")
def tanh_box():
    """The d = 1 float8_e4m3 tanh box and its Theorem 5 network (one upstream value per point)."""
    from condcheck.targets import full_box
    X = full_box("tanh", "float8_e4m3", 1)
    return (X, *_theorem5("tanh", "float8_e4m3", X, 0))


def _theorem5(act, fmt_name, X, seed):
    from condcheck.targets import random_targets
    from condcheck.theorem5 import construct_theorem5
    f, h, g = random_targets(fmt_name, X, seed, 0.25)
    return construct_theorem5(act, fmt_name, X, f, h, g, verify_result=False)


def test_the_shared_upstream_forward_pass_keeps_a_theorem7_network_as_few_exceptions():
    """A gated Theorem 7 network (chains on their off states at the other points): the forward pass on
    defaults and exceptions gives the codes of the pass over every point, with far fewer exceptions than
    points x neurons."""
    from condcheck.interpreters.sparse.classes import forward_compressed
    from condcheck.interpreters.sparse.common import Structure, derivative_table
    from condcheck.interpreters.sparse.shared_forward import forward_defaults
    from condcheck.targets import random_odd_tables
    from condcheck.theorem7 import construct_theorem7
    F = get_format("float8_e4m3")
    V = F.values()
    X = np.array([[-3.0], [0.0], [0.5], [7.0]])
    Y = V[np.abs(V) <= 2]
    fv, G = random_odd_tables(F, X, Y, 1)
    net = construct_theorem7("gelu", F, X, fv, G, upstream=Y).network
    dtab, zero_index = derivative_table(net)
    sv, (mode, ep, et, ec) = forward_defaults(net, X, zero_index, dtab)
    dv, dense = forward_compressed(net, Structure(net), X, zero_index, dtab)

    def expand(mode, ep, et, ec):
        C = np.repeat(mode[None, :], len(X), axis=0)
        for g in range(len(mode)):
            C[et[ep[g]:ep[g + 1]], g] = ec[ep[g]:ep[g + 1]]
        return C
    assert np.array_equal(sv, dv) and np.array_equal(expand(mode, ep, et, ec), expand(*dense))
    assert len(et) < len(mode) * len(X) / 2


@pytest.mark.parametrize("act", ["relu", "tanh", "sigmoid"])
def test_a_theorem5_box_network_verifies_by_its_tables_without_falling_back(act):
    """The d = 1 float8_e4m3 box, one upstream value per point: the table strategy answers by itself,
    and the claim verifies with the sparse interpreter."""
    from condcheck.interpreters.sparse.explicit import evaluate_per_point
    from condcheck.interpreters.sparse.options import SparseOptions
    from condcheck.targets import full_box
    from condcheck.verify import verify
    X = full_box(act, "float8_e4m3", 1)
    net, claim = _theorem5(act, "float8_e4m3", X, 0)
    assert evaluate_per_point(net, X, claim.upstream.reshape(-1, 1), None, SparseOptions()) is not None
    res = verify(net, claim, method="sparse")
    assert res.ok and res.method == "sparse"


def test_the_per_point_pass_holds_one_block_of_default_backward_values_at_a_time(monkeypatch, tanh_box):
    """``default_bytes`` bounds the default backward values held at once: a block's D goes before the
    next is made (two were alive together, 127 MiB on a bfloat16 box part instead of 63)."""
    import gc
    import weakref

    from condcheck.interpreters.sparse import explicit
    from condcheck.interpreters.sparse.options import SparseOptions
    X, net, claim = tanh_box
    made, most = [], [0]
    values = explicit._DefaultPlan.values

    def counted(plan, y, dt, rp):
        gc.collect()
        most[0] = max(most[0], sum(r() is not None for r in made))
        D = values(plan, y, dt, rp)
        made.append(weakref.ref(D))
        return D
    monkeypatch.setattr(explicit._DefaultPlan, "values", counted)
    got = explicit.evaluate_per_point(net, X, claim.upstream.reshape(-1, 1), None, SparseOptions(default_bytes=1))
    assert got is not None and len(made) == len(np.unique(claim.upstream)) > 1 and most[0] == 0
    assert np.array_equal(got[1].reshape(-1), claim.gradients.reshape(-1))


def test_the_table_forward_pass_holds_a_rows_inputs_at_a_block_of_values_at_a_time(monkeypatch, tanh_box):
    """``table_block_entries`` bounds the inputs held at once, over a block of the coordinate's values
    (the output row of a bfloat16 box's part held its 125,770 inputs at all 256 values: 257 MB)."""
    from condcheck.interpreters.sparse import explicit, table_forward
    from condcheck.interpreters.sparse.options import SparseOptions
    X, net, claim = tanh_box
    shapes, sums = [], table_forward.rounded_row_sums

    def counted(V, *args):
        shapes.append(V.shape)
        return sums(V, *args)
    monkeypatch.setattr(table_forward, "rounded_row_sums", counted)
    entries = 4096
    got = explicit.evaluate_per_point(net, X, claim.upstream.reshape(-1, 1), None,
                                      SparseOptions(table_block_entries=entries))
    assert got is not None and np.array_equal(got[0], claim.values)
    assert np.array_equal(got[1].reshape(-1), claim.gradients.reshape(-1))
    # (rows that read hundreds of neurons: at all 209 values of the box, over 4,096 entries)
    assert all(b * c <= max(entries, c) for b, c in shapes)
    assert any(b < len(X) for b, c in shapes) and max(c for b, c in shapes) * len(X) > entries


def test_a_theorem5_network_on_a_two_dimensional_grid_gives_its_claim_with_the_sparse_interpreter():
    from condcheck.targets import full_box
    rng = np.random.default_rng(3)
    col = full_box("gelu", "float8_e4m3", 1)[:, 0]
    c = np.sort(rng.choice(col, 9, replace=False))
    X = np.array([(a, b) for a in c for b in c])
    net, claim = _theorem5("gelu", "float8_e4m3", X, 1)
    assert len(np.unique(claim.upstream)) > 10
    sv, sg = get_interpreter("sparse").evaluate(net, X, claim.upstream)
    dv, dg = get_interpreter("dense").evaluate(net, X, claim.upstream)
    assert np.array_equal(sv, claim.values) and np.array_equal(sg, claim.gradients)
    assert np.array_equal(dv, sv) and np.array_equal(dg, sg)


@pytest.mark.parametrize("sparse_table", [8, 1, 0])
def test_the_sigma_derivative_tables_of_a_box_networks_gradient_chains_are_kept_as_exceptions(sparse_table):
    """A Theorem 5 box network's gradient chains are live at their own point only: their sigma~' tables
    are kept as exceptions by value index (sparse_table = 8: where at most 1/8 of the values differ;
    1: every table; 0: none; relu on 4,096 bfloat16 box points: the dense tables peaked at 5.96 GiB)."""
    from condcheck.interpreters.sparse.common import derivative_table
    from condcheck.interpreters.sparse.options import SparseOptions
    from condcheck.interpreters.sparse.table_forward import forward_tables
    from condcheck.targets import full_box
    X = full_box("relu", "float8_e4m3", 1)
    net, claim = _theorem5("relu", "float8_e4m3", X, 0)
    dtab, zero_index = derivative_table(net)
    values, bw = forward_tables(net, X, zero_index, dtab, SparseOptions(sparse_table=sparse_table))
    assert np.array_equal(values, claim.values)
    tables = bw.bkind >= 0
    as_exceptions = int((tables & (bw.tptr < 0)).sum())
    assert (as_exceptions > 100) == (sparse_table > 0)
    assert (as_exceptions == int(tables.sum())) == (sparse_table == 1)


def test_the_kernels_here_run_on_every_thread_of_the_pool():
    numba = kernels.load_numba()
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
