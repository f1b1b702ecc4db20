"""Plug-in implementations (condcheck.implementations, issue 31): a user's array functions as sigma~ and
sigma~', observed.  A plug-in that is float32-upcast's arithmetic must give float32-upcast's values and
verdicts, one that wraps torch's kernel torch's values; what a plug-in returns is checked, and bad output
is refused in one line; the name works from the CLI, in certificates and in recheck, in a fresh process
with the plug-in installed as an entry point."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy
from click.testing import CliRunner
from plugin_distribution import fake_distribution

from condcheck import activations as A
from condcheck import implementations as I
from condcheck.activations import get_activation
from condcheck.check import check_activation
from condcheck.cli import main
from condcheck.distributed import SerialRunner
from condcheck.errors import CondcheckError
from condcheck.implementations import register_implementation
from condcheck.recheck import recheck_certificate
from condcheck.rounded_activation import get_rounded
from conditions.chunked import check_chunked, summarize
from conditions.chunks import ChunkJob

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def registry():
    """Scratch registries of activations and implementations."""
    with A.scoped_registry(plugins_loaded=True), I.scoped_implementations():
        yield


def upcast_arithmetic(act, derivative):
    """The expression (or its derivative) in numpy/scipy float32 arithmetic, cast back to the input's dtype."""
    import scipy.special
    a = get_activation(act)
    f = sympy.lambdify(A.x, sympy.sympify(a.derivative if derivative else a.expr).evalf(),
                       modules=[{"erf": scipy.special.erf, "erfc": scipy.special.erfc}, "numpy"])

    def fn(x):
        with np.errstate(all="ignore"):
            y = np.broadcast_to(np.asarray(f(x.astype(np.float32))), x.shape)
        return y.astype(x.dtype)
    return fn


def register_upcast(name, act, formats):
    return register_implementation(name, act, upcast_arithmetic(act, False), upcast_arithmetic(act, True), formats)


def _same_values(a, ao, b, bo):
    assert np.array_equal(ao, bo)
    assert np.array_equal(np.where(ao, 0.0, a), np.where(bo, 0.0, b))


@pytest.mark.parametrize("act", ["gelu", "tanh", "sigmoid"])
def test_numpy_float32_arithmetic_as_a_plugin_gives_the_float32_upcast_tables_on_every_16_bit_value(registry, act):
    register_upcast("np32", act, ("float16", "bfloat16"))
    for fmt in ("float16", "bfloat16"):
        p, u = get_rounded(act, fmt, "np32").table(), get_rounded(act, fmt, "float32-upcast").table()
        assert np.array_equal(p.points, u.points)
        _same_values(p.sigma, p.sigma_overflow, u.sigma, u.sigma_overflow)
        _same_values(p.dsigma, p.dsigma_overflow, u.dsigma, u.dsigma_overflow)


# float32 slices where gelu's values change character: its dead tail's edge, near -1, around 0, near 1, huge
FLOAT32_SLICES = [(0x40C00000, 0x40C00000 + 4096), (0x3F7FF800, 0x3F800800), (0, 4096), (0x5F000000, 0x5F001000)]


def test_numpy_float32_arithmetic_as_a_plugin_gives_float32_upcasts_float32_chunks(registry):
    impl = register_upcast("np32", "gelu", ("float32",))
    for lo, hi in FLOAT32_SLICES:
        p = summarize(ChunkJob("gelu", "float32", "np32", lo, hi, "direct", impl))
        u = summarize(ChunkJob("gelu", "float32", "float32-upcast", lo, hi, "direct"))
        assert p.digest == u.digest and p.c1 == u.c1 and p.c2.same(u.c2) and p.c3.same(u.c3)


def test_a_chunked_check_of_a_plugin_gives_float32_upcasts_verdicts_and_witnesses(registry):
    register_upcast("np32", "gelu", ("bfloat16",))
    got, info = check_chunked(get_rounded("gelu", "bfloat16", "np32"), chunk_magnitudes=4096, runner=SerialRunner())
    ref, _ = check_chunked(get_rounded("gelu", "bfloat16", "float32-upcast"), chunk_magnitudes=4096,
                           runner=SerialRunner())
    for k in "123":
        assert (got[k].holds, got[k].witness, got[k].failing_clause) == (ref[k].holds, ref[k].witness,
                                                                         ref[k].failing_clause)
    assert info["sigma_source"].startswith("plug-in implementation np32 (")


def test_a_plugin_wrapping_torchs_cpu_kernel_gives_the_torch_implementations_float32_values(registry):
    torch = pytest.importorskip("torch")
    from condcheck.torch_impl import PAD, torch_points

    def run(x):                                   # as the torch implementation runs it: padded, one thread
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            t = torch.from_numpy(np.concatenate([x, np.zeros((-x.size) % PAD, np.float32)])).requires_grad_(True)
            y = torch.nn.functional.gelu(t)
            (g,) = torch.autograd.grad(y, t, grad_outputs=torch.ones_like(y))
        finally:
            torch.set_num_threads(n)
        return y.detach().numpy()[:x.size], g.numpy()[:x.size]
    register_implementation("torch_gelu", "gelu", lambda x: run(x)[0], lambda x: run(x)[1])
    rng = np.random.default_rng(31)
    bits = rng.integers(0, 0x7F800000, 20000, dtype=np.uint32) | (rng.integers(0, 2, 20000, dtype=np.uint32) << 31)
    pts = np.unique(bits.view(np.float32).astype(np.float64))
    got = get_rounded("gelu", "float32", "torch_gelu")
    s, so = got.value_array(pts)
    d, do = got.derivative_array(pts)
    ts, tso, td, tdo = torch_points("gelu", "float32", pts)
    _same_values(s, so, ts, tso)
    _same_values(d, do, td, tdo)


def _relu(x):
    return np.maximum(x, x.dtype.type(0))


def _step(x):
    return (x > 0).astype(x.dtype)


@pytest.mark.parametrize("forward,what", [
    (lambda x: x.astype(np.float64) * 1.1, "which is not a value of float32"),
    (lambda x: _relu(x)[:-1], "it must return one value per input"),
    (lambda x: _relu(x).astype(np.int32), "returned int32 values on float32; allowed: float32, float64"),
    (lambda x: list(x), "returned a list, not an array"),
    (lambda x: 1 / 0, "its forward raised ZeroDivisionError"),
])
def test_a_plugin_returning_bad_output_is_refused_at_registration_in_one_line(registry, forward, what):
    with pytest.raises(CondcheckError, match="^implementation 'bad': ") as e:
        register_implementation("bad", "relu", forward, _step)
    assert what in str(e.value) and "\n" not in str(e.value)


def test_a_value_off_the_format_at_a_point_the_registration_did_not_try_is_refused_naming_it(registry):
    off = lambda x: np.where(np.abs(x) > 4, x.astype(np.float64) + 2.0 ** -40, _relu(x))   # noqa: E731
    register_implementation("off", "relu", off, _step, formats=("bfloat16",))
    with pytest.raises(CondcheckError, match="implementation 'off': its forward at -.* returned .*, which is not "
                                             "a value of bfloat16"):
        check_activation("relu", "bfloat16", "off")


def test_an_implementation_serves_only_its_activation_and_formats(registry):
    register_implementation("np_relu", "relu", _relu, _step, formats=("float16",))
    with pytest.raises(CondcheckError, match="'np_relu' computes relu only, not gelu"):
        get_rounded("gelu", "float16", "np_relu")
    with pytest.raises(CondcheckError, match="'np_relu' computes relu on float16 only, not bfloat16"):
        check_activation("relu", "bfloat16", "np_relu")


@pytest.mark.parametrize("name", ["exact", "float32-upcast", "torch"])
def test_a_plugin_may_not_take_a_built_in_implementations_name(registry, name):
    with pytest.raises(CondcheckError, match=f"implementation name '{name}' is built in"):
        register_implementation(name, "relu", _relu, _step)


def test_a_name_registered_with_other_functions_is_refused(registry):
    register_implementation("np_relu", "relu", _relu, _step, formats=("float16",))
    register_implementation("np_relu", "relu", _relu, _step, formats=("float16",))        # the same: fine
    with pytest.raises(CondcheckError, match="'np_relu' is already registered"):
        register_implementation("np_relu", "relu", _relu, lambda x: _step(x), formats=("float16",))


def test_the_cli_lists_registered_plugins_when_an_implementation_is_unknown(registry):
    register_implementation("np_relu", "relu", _relu, _step, formats=("float16",))
    out = CliRunner().invoke(main, ["check", "relu", "float16", "-i", "np_rel"])
    assert out.exit_code == 2
    assert out.output.strip() == ("error: unknown implementation 'np_rel'; did you mean 'np_relu'? Known "
                                  "implementations: exact, float32-upcast, np_relu, torch")


def test_recheck_accepts_a_plugins_certificate_and_rejects_a_changed_one(registry):
    register_upcast("np32", "gelu", ("bfloat16",))
    cert = json.loads(json.dumps(check_activation("gelu", "bfloat16", "np32").to_certificate()))
    assert cert["implementation"] == "np32" and "observed, not certified" in cert["sigma_source"]
    assert recheck_certificate(cert)["ok"]
    for change, statement in (({"sigma_source": cert["sigma_source"].replace("observed", "proved")}, "sigma_source"),
                              ({"implementation": "np33"}, "implementation"),
                              ({"implementation": "float32-upcast"}, "sigma_source")):   # same values, certified
        res = recheck_certificate({**cert, **change})
        assert not res["ok"] and res["problem"]["statement"] == statement, res["problem"]


PLUGIN_MODULE = '''
import numpy as np

def relu(x):
    return np.maximum(x, x.dtype.type(0))

def step(x):
    return (x > 0).astype(x.dtype)

def register():
    from condcheck import register_implementation
    register_implementation("np_relu", "relu", relu, step, formats=("bfloat16", "float32"))
'''


def test_an_entry_point_implementation_is_found_by_check_and_recheck_in_fresh_processes(tmp_path):
    d = fake_distribution(tmp_path, "fakeimpl", "fakeimpl_mod", PLUGIN_MODULE, {"np_relu": "fakeimpl_mod:register"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(d), str(REPO)])}
    run = lambda *args: subprocess.run([sys.executable, "-m", "condcheck", *args], capture_output=True,  # noqa: E731
                                       text=True, env=env, cwd=tmp_path, timeout=300)
    out = run("check", "relu", "bfloat16", "-i", "np_relu", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["sigma_source"].startswith(
        "plug-in implementation np_relu (fakeimpl_mod:relu, fakeimpl_mod:step)")
    (tmp_path / "cert.json").write_text(out.stdout)
    out = run("recheck", "cert.json")
    assert out.returncode == 0 and "certificate re-checked" in out.stdout, out.stdout + out.stderr


def test_recheck_enumerates_a_plugins_dead_tail_chunks_as_float32_upcasts(registry):
    from condcheck.recheck.wide import TailJob, tail_chunk
    impl = register_upcast("np32", "gelu", ("float32",))
    got = []
    for lo in (0x41700000, 0x3F800000):                     # from -15 down: dead; from -1 down: live
        p = tail_chunk(TailJob("gelu", "float32", "np32", -1, lo, lo + 4096, 0.0, impl))
        u = tail_chunk(TailJob("gelu", "float32", "float32-upcast", -1, lo, lo + 4096, 0.0))
        assert p == u
        got.append(p)
    assert got[0] == (4096, None) and got[1][1] is not None


def test_a_name_registered_again_in_another_scope_gets_its_own_table_not_the_first_ones():
    with I.scoped_implementations():
        register_implementation("np_scoped", "relu", _relu, _step, formats=("float16",))
        first = get_rounded("relu", "float16", "np_scoped").table()
    with I.scoped_implementations():
        register_implementation("np_scoped", "relu", lambda x: _relu(x) * x.dtype.type(0), _step,
                                formats=("float16",))
        second = get_rounded("relu", "float16", "np_scoped").table()
    assert np.any(first.sigma != 0) and np.all(second.sigma == 0)
