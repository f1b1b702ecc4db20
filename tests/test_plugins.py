"""Plug-in activations (issue 7): sympy expressions, strings, mpmath callables and entry points, used
everywhere a built-in is (check, recheck, construct, CLI).

Verdicts here are never hard-coded: a plug-in equal to a built-in must give the built-in's verdict and
witnesses, and the other expectations are derived independently below (with exact Fractions and
mpmath, not through condcheck's tables).
"""
import json
import sys
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy
from click.testing import CliRunner
from plugin_distribution import fake_distribution

from condcheck import activations as A
from condcheck.activations import (Activation, PluginWarning, get_activation, list_activations, load_plugins,
                                   make_activation, register_activation, x)
from condcheck.check import check_activation
from condcheck.cli import main
from condcheck.errors import CondcheckError, UnknownNameError
from condcheck.formats import get_format
from condcheck.recheck import recheck_certificate
from condcheck.rounded_activation import get_rounded
from condcheck.rounding import round_fraction
from condcheck.theorem5 import construct_theorem5
from condcheck.verify import verify

FORMATS = ("float8_e4m3", "float6_e3m2fn", "bfloat16")
SMALL_FORMATS = ("float8_e4m3", "float6_e3m2fn", "float8_e5m2")     # for callables (bfloat16 takes ~20 s)

SOFTSIGN = x / (1 + sympy.Abs(x))
SMELU = "Piecewise((0, x <= -1), ((x + 1)**2/4, x <= 1), (x, True))"   # smooth ReLU, C^1 at -1 and 1


def asinh_d(t):
    return 1 / mpmath.sqrt(1 + t * t)


@pytest.fixture
def registry():
    """A scratch copy of the registry, with entry points marked as loaded (tests load them on purpose)."""
    with A.scoped_registry(plugins_loaded=True):
        yield


@pytest.fixture
def unloaded_registry():
    """A scratch copy of the registry whose entry points the first lookup of an unknown name loads."""
    with A.scoped_registry(plugins_loaded=False):
        yield


def _same_result(a, b):
    """Verdicts, failing clauses and witnesses of two check results are equal."""
    assert a.holds == b.holds
    for k in "123":
        ca, cb = a.conditions[k], b.conditions[k]
        assert (ca["holds"], ca["failing_clause"], ca["witness"]) == (cb["holds"], cb["failing_clause"], cb["witness"])


# ---- (a) sympy expressions and strings --------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ("float8_e4m3", "float6_e2m3fn", "bfloat16"))
def test_a_sympy_expression_equal_to_swish_gets_swishs_verdict_and_witnesses(registry, fmt):
    register_activation("my_swish", x / (1 + sympy.exp(-x)))
    _same_result(check_activation("my_swish", fmt), check_activation("swish", fmt))


@pytest.mark.parametrize("fmt", ("float8_e4m3", "float6_e2m3fn", "float16"))
def test_a_string_equal_to_mish_gets_mishs_verdict_and_witnesses(registry, fmt):
    register_activation("my_mish", "x*tanh(log(1+exp(x)))")
    _same_result(check_activation("my_mish", fmt), check_activation("mish", fmt))


def _softsign_dead_from(fmt):
    """The smallest v > 0 of F with softsign~(-v) = -1 and softsign~'(-v) = 0, derived by hand.

    softsign(z) = z / (1 + |z|) = -1 + 1/(1 + v) for z = -v <= 0, and softsign'(z) = 1/(1 + v)^2, both
    monotone in v.  Just above -1 the spacing of F is 2^-(M+1); -1 has an even significand and its
    neighbour -(1 - 2^-(M+1)) an odd one, so RN gives -1 exactly when 1/(1+v) <= 2^-(M+2) (a tie goes to
    -1).  The derivative rounds to 0 exactly when it is at most half the smallest subnormal,
    2^(e_min-M-1) (a tie goes to the even 0).  Both thresholds are monotone, so the dead tail is
    {z <= -v0} with v0 the smallest value meeting both: softsign has no dead tail in the reals (it is
    strictly increasing), only through rounding.
    """
    F = get_format(fmt)
    for v in F.fractions():
        if v > 0 and 1 / (1 + v) <= Fraction(1, 2 ** (F.M + 2)) and \
                1 / (1 + v) ** 2 <= Fraction(2) ** (F.e_min - F.M - 1):
            return F, v
    return F, None


@pytest.mark.parametrize("fmt", FORMATS)
def test_softsign_from_a_sympy_expression_has_the_dead_tail_derived_by_hand(registry, fmt):
    register_activation("softsign", SOFTSIGN)
    res = check_activation("softsign", fmt)
    F, v0 = _softsign_dead_from(fmt)
    c1 = res.conditions["1"]
    # Condition 1 (a) needs the tail to reach -Omega/2: it holds exactly when -v0 >= -Omega/2.
    if v0 is not None and v0 <= F.max / 2:
        assert c1["holds"] is True
        assert Fraction(c1["witness"]["z_dead"]["fraction"]) == -v0
        assert Fraction(c1["witness"]["L"]["fraction"]) == -1
    else:
        assert c1["holds"] is False and c1["failing_clause"].startswith("(a)")
    # softsign'(0) = 1 >= 2^-M: Condition 3 takes route (a)
    assert res.conditions["3"]["holds"] is True and res.conditions["3"]["witness"]["route"] == "a"


def test_softsign_fails_condition_1_on_float6_e3m2fn_because_its_tail_starts_beyond_omega_over_2(registry):
    # the derivation above, spelled out for float6_e3m2fn (M = 2, Omega = 28): -1 needs 1 + v >= 16, the
    # first such value is 16 > 14 = Omega/2.
    F, v0 = _softsign_dead_from("float6_e3m2fn")
    assert v0 > F.max / 2
    register_activation("softsign", SOFTSIGN)
    assert check_activation("softsign", "float6_e3m2fn").conditions["1"]["failing_clause"].startswith("(a)")


def _smelu_exact(q: Fraction):
    return Fraction(0) if q <= -1 else ((q + 1) ** 2 / 4 if q <= 1 else q)


def _smelu_d_exact(q: Fraction):
    return Fraction(0) if q <= -1 else ((q + 1) / 2 if q <= 1 else Fraction(1))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_piecewise_polynomial_from_a_string_is_rounded_exactly_and_its_dead_tail_is_the_derived_one(registry, fmt):
    register_activation("smelu", SMELU)
    F = get_format(fmt)
    r = get_rounded("smelu", F)
    pts = [q for q in F.fractions() if abs(q) <= 4]
    # a piecewise polynomial is rational at rational points: round it with Fractions, independently
    for q in pts:
        assert r.value(q) == round_fraction(_smelu_exact(q), F)
        assert r.derivative(q) == round_fraction(_smelu_d_exact(q), F)
    # dead: sigma~ = 0 and sigma~' = 0; both (z+1)^2/4 and (z+1)/2 grow with z, so the tail ends at the
    # last z before the first value where either rounds away from 0
    z_d = max(q for q in F.fractions() if q <= 0 and round_fraction(_smelu_exact(q), F) == 0
              and round_fraction(_smelu_d_exact(q), F) == 0)
    res = check_activation("smelu", fmt)
    assert res.conditions["1"]["holds"] is True
    assert Fraction(res.conditions["1"]["witness"]["z_dead"]["fraction"]) == z_d


# ---- (b) callables -------------------------------------------------------------------------------------------
def _derived_asinh_tail(F):
    """asinh is strictly increasing with asinh' = 1/sqrt(1+z^2) > 0; a dead tail reaching -Omega/2 needs
    RN(asinh(-Omega)) = RN(asinh(-Omega/2)) and RN(asinh'(-Omega/2)) = 0 (computed here with mpmath at
    200 bits, away from any rounding boundary, and exact rounding of the decimal)."""
    with mpmath.workprec(200):
        def rn(v):
            return round_fraction(Fraction(mpmath.nstr(v, 60, min_fixed=-1, max_fixed=1)), F)
        om = mpmath.mpf(F.max.numerator) / F.max.denominator
        return rn(mpmath.asinh(-om)) == rn(mpmath.asinh(-om / 2)) and rn(asinh_d(-om / 2)) == 0


@pytest.mark.parametrize("fmt", SMALL_FORMATS)
def test_asinh_from_mpmath_callables_is_checked_and_marked_as_trusted(registry, fmt):
    register_activation("asinh", function=mpmath.asinh, derivative=asinh_d)
    res = check_activation("asinh", fmt)
    F = get_format(fmt)
    if _derived_asinh_tail(F):
        assert res.conditions["1"]["holds"] is True
    else:
        assert res.conditions["1"]["holds"] is False and res.conditions["1"]["failing_clause"].startswith("(a)")
    # asinh'(0) = 1: route (a) of Condition 3
    assert res.conditions["3"]["witness"]["route"] == "a"
    for k in "123":
        assert "callable, trusted" in res.conditions[k]["evidence"]
    assert "callable, trusted" in res.to_certificate()["sigma_source"]
    assert "callable, trusted" in res.text()


def test_asinh_callables_round_like_the_certified_sympy_asinh(registry):
    register_activation("asinh_c", function=mpmath.asinh, derivative=asinh_d)
    register_activation("asinh_s", sympy.asinh(x))
    for fmt in SMALL_FORMATS:
        a, b = get_rounded("asinh_c", fmt).table(), get_rounded("asinh_s", fmt).table()
        assert np.array_equal(a.sigma, b.sigma) and np.array_equal(a.dsigma, b.dsigma)


def _gelu_f(t):
    return t / 2 * mpmath.erfc(-t / mpmath.sqrt(2))        # erfc: no cancellation for t << 0


def _gelu_df(t):
    return mpmath.erfc(-t / mpmath.sqrt(2)) / 2 + t * mpmath.exp(-t * t / 2) / mpmath.sqrt(2 * mpmath.pi)


@pytest.mark.parametrize("fmt", ("float8_e4m3", "float6_e2m3fn", "float8_e5m2"))
def test_gelu_from_callables_gets_the_builtin_gelus_tables_verdict_and_witnesses(registry, fmt):
    register_activation("gelu_c", function=_gelu_f, derivative=_gelu_df)
    a, b = get_rounded("gelu_c", fmt).table(), get_rounded("gelu", fmt).table()
    assert np.array_equal(a.sigma, b.sigma) and np.array_equal(a.dsigma, b.dsigma)
    _same_result(check_activation("gelu_c", fmt), check_activation("gelu", fmt))


@pytest.mark.slow
def test_gelu_from_callables_gets_the_builtin_gelus_bfloat16_table(registry):
    register_activation("gelu_c", function=_gelu_f, derivative=_gelu_df)
    a, b = get_rounded("gelu_c", "bfloat16").table(), get_rounded("gelu", "bfloat16").table()
    assert np.array_equal(a.sigma, b.sigma) and np.array_equal(a.dsigma, b.dsigma)


def test_a_wrong_derivative_is_refused_with_a_message_naming_the_point(registry):
    with pytest.raises(CondcheckError, match=r"'bad_asinh': the derivative does not match the function at x = -7\.3125"):
        register_activation("bad_asinh", function=mpmath.asinh, derivative=lambda t: 1 / (1 + t * t))
    assert not A.is_registered("bad_asinh")


def test_a_derivative_wrong_only_on_the_positive_side_is_refused_at_the_first_positive_sample(registry):
    with pytest.raises(CondcheckError, match=r"at x = 0\.0390625"):
        register_activation("half", function=lambda t: t * t, derivative=lambda t: 2 * t if t < 0 else t)


def test_a_kinked_callable_with_a_correct_derivative_is_accepted(registry):
    # ReLU through callables: the sample points avoid 0, where the kink is
    act = register_activation("relu_c", function=lambda t: t if t > 0 else mpmath.mpf(0),
                              derivative=lambda t: mpmath.mpf(1) if t > 0 else mpmath.mpf(0))
    assert act.is_callable
    _same_result(check_activation("relu_c", "float8_e4m3"), check_activation("relu", "float8_e4m3"))


def test_a_callable_that_is_not_mpmath_capable_is_refused_with_the_point(registry):
    with pytest.raises(CondcheckError, match="returned 'oops'"):
        register_activation("strange", function=lambda t: "oops", derivative=lambda t: 1)


def test_a_callable_value_exactly_on_a_rounding_boundary_is_an_error_naming_the_point(registry):
    # (1.25)^2 = 1.5625 = 1.1001b lies halfway between 1.5 and 1.625 in float8_e4m3: a callable cannot
    # settle the tie (it never leaves the boundary), so condcheck says so instead of guessing
    register_activation("square", function=lambda t: t * t, derivative=lambda t: 2 * t)
    with pytest.raises(CondcheckError, match=r"square\((-?[0-9.]+)\) to float8_e4m3.*tie") as e:
        get_rounded("square", "float8_e4m3").value(1.25)
    # the point it names really is a tie: its square is the midpoint of two neighbouring values
    F = get_format("float8_e4m3")
    q = Fraction(float(e.value.args[0].split("square(")[1].split(")")[0])) ** 2
    lo = max(v for v in F.fractions() if v <= q)
    hi = min(v for v in F.fractions() if v >= q)
    assert lo < q < hi and q == (lo + hi) / 2


def test_a_callable_returning_a_fraction_is_rounded_exactly_so_ties_go_to_even(registry):
    # exact where t is a float (the format's points), mpmath elsewhere (mpmath.diff's steps)
    register_activation("square_q", function=lambda t: Fraction(float(t)) ** 2 if t == float(t) else t * t,
                        derivative=lambda t: 2 * t)
    assert get_rounded("square_q", "float8_e4m3").value(1.25) == Fraction(3, 2)       # 1.5 has the even significand
    sq = sympy.Piecewise((x ** 2, True))
    register_activation("square_s", sq)
    assert get_rounded("square_s", "float8_e4m3").value(1.25) == Fraction(3, 2)


def test_a_callable_gelu_with_cancellation_is_trusted_not_certified(registry):
    # t/2 * (1 + erf(t/sqrt 2)) cancels for t << 0: at 2p+16 and 4p+32 bits both evaluations give exactly 0
    # where gelu(-13.5) ~ -1e-40 is a bfloat16 subnormal.  Two precisions agree, so the rounding is
    # accepted -- the documented limit of a trusted callable.  In float8 these values round to 0 anyway.
    f = lambda t: t / 2 * (1 + mpmath.erf(t / mpmath.sqrt(2)))          # noqa: E731
    register_activation("gelu_erf", function=f, derivative=_gelu_df)
    assert get_rounded("gelu_erf", "bfloat16").value(-13.5) == 0
    assert get_rounded("gelu", "bfloat16").value(-13.5) != 0


# ---- (c) entry points ---------------------------------------------------------------------------------------
PLUGIN_MODULE = '''
import mpmath
from condcheck.activations import make_activation, register_activation

def _xs2(t):
    return t / (1 + mpmath.exp(-2 * t))

def _xs2_d(t):
    s = 1 / (1 + mpmath.exp(-2 * t))
    return s + 2 * t * s * (1 - s)

XSIG2 = make_activation("xsig2", function=_xs2, derivative=_xs2_d, description="x * sigmoid(2x) from callables")

def register_more():
    register_activation("xsig2_expr", "x/(1+exp(-2*x))")
'''


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch, unloaded_registry):
    d = fake_distribution(tmp_path, "fakeplug", "fakeplug_acts", PLUGIN_MODULE,
                           {"xsig2": "fakeplug_acts:XSIG2", "more": "fakeplug_acts:register_more"})
    monkeypatch.syspath_prepend(str(d))
    yield d
    sys.modules.pop("fakeplug_acts", None)


def test_entry_points_are_loaded_lazily_on_the_first_lookup_of_an_unknown_name(plugin_dist):
    assert not A.is_registered("xsig2")                # nothing loaded at import
    act = get_activation("xsig2")
    assert act.is_callable and "entry point fakeplug:xsig2" in act.source
    assert "xsig2_expr" in list_activations()          # the registering callable ran too
    assert A.plugins_loaded() and A.plugin_errors() == []


@pytest.mark.parametrize("fmt", SMALL_FORMATS)
def test_x_sigmoid_2x_from_an_entry_point_matches_its_certified_string_form(plugin_dist, fmt):
    a, b = get_rounded("xsig2", fmt).table(), get_rounded("xsig2_expr", fmt).table()
    assert np.array_equal(a.sigma, b.sigma) and np.array_equal(a.dsigma, b.dsigma)
    _same_result(check_activation("xsig2", fmt), check_activation("xsig2_expr", fmt))


def test_x_sigmoid_2x_is_swish_of_2x_halved_so_its_table_follows_from_swishs_real_values(plugin_dist):
    # x*sigmoid(2x) = swish(2x)/2 exactly, and RN(y/2) = RN(y)/2 while y/2 stays in the normal range
    # (halving shifts the grid with it); where RN(swish(2q)) = 0, |xsig2(q)| <= omega/4 rounds to 0 too
    F = get_format("float8_e4m3")
    r, s = get_rounded("xsig2", F), get_rounded("swish", F)
    checked = 0
    for q in F.fractions():
        if abs(q) <= 64:
            y = s.value(2 * q)
            if y == 0 or abs(y) >= 2 * F.smallest_normal:
                assert r.value(q) == y / 2
                checked += 1
    assert checked > 150


def test_a_broken_plug_in_is_a_warning_naming_it_and_never_a_traceback(tmp_path, monkeypatch, unloaded_registry):
    d = fake_distribution(tmp_path, "brokenplug", "brokenplug_acts", "raise RuntimeError('no luck')\n",
                           {"broken": "brokenplug_acts:ACT", "missing": "no_such_module_xyz:ACT"})
    monkeypatch.syspath_prepend(str(d))
    with pytest.warns(PluginWarning, match="'broken'.*RuntimeError: no luck"):
        names = list_activations()
    assert "relu" in names
    assert any("no_such_module_xyz" in e for e in A.plugin_errors())
    with pytest.raises(UnknownNameError, match="Plug-ins that failed to load: .*'broken'"):
        get_activation("xsig2")
    sys.modules.pop("brokenplug_acts", None)


def test_an_entry_point_that_loads_something_else_is_reported(tmp_path, monkeypatch, unloaded_registry):
    d = fake_distribution(tmp_path, "oddplug", "oddplug_acts", "ACT = 42\n", {"odd": "oddplug_acts:ACT"})
    monkeypatch.syspath_prepend(str(d))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        load_plugins()
    assert any("not an Activation or a callable" in str(m.message) for m in w)
    sys.modules.pop("oddplug_acts", None)


def test_make_activation_refuses_an_expression_and_callables_together():
    with pytest.raises(CondcheckError, match="not both"):
        make_activation("both", "x", function=mpmath.asinh, derivative=asinh_d)
    with pytest.raises(CondcheckError, match="both function= and derivative="):
        make_activation("half", function=mpmath.asinh)


# ---- everywhere a built-in works: recheck, construct, CLI ---------------------------------------------------------
def test_certificates_of_plug_ins_recheck(plugin_dist):
    register_activation("softsign", SOFTSIGN)
    register_activation("smelu", SMELU)
    for name, fmt in (("softsign", "float8_e4m3"), ("smelu", "float6_e3m2fn"), ("xsig2", "float8_e4m3")):
        cert = json.loads(json.dumps(check_activation(name, fmt).to_certificate()))
        assert cert["holds"] is True
        out = recheck_certificate(cert)
        assert out["ok"], out


def _points_and_targets(F, n, seed):
    V = F.values()
    X = np.array([-1.0, -0.5, 0.0, 0.25, 0.75, 1.5, 3.0])[:n].reshape(-1, 1)
    rng = np.random.default_rng(seed)
    f = rng.choice(V[np.abs(V) <= 4], len(X))
    h = np.full(len(X), 0.25)
    g = rng.choice(np.array([-0.5, -0.25, 0.25, 0.5]), (len(X), 1))
    return X, f, h, g


@pytest.mark.parametrize("name, fmt", [("smelu", "float6_e3m2fn"), ("xsig2", "float8_e4m3")])
def test_theorem5_networks_are_built_and_verified_for_plug_ins(plugin_dist, name, fmt):
    register_activation("smelu", SMELU)
    F = get_format(fmt)
    X, f, h, g = _points_and_targets(F, 7, seed=1)
    net, claim = construct_theorem5(name, F, X, f, h, g)
    assert net.activation == name
    res = verify(net, claim, method="exact")
    assert res.ok, res.summary()
    assert res.gradient_checks == len(X)


def test_theorem5_builds_x_sigmoid_2x_on_float6_e3m2fn_with_every_weight_in_the_format(plugin_dist):
    # once a constructor bug: the step constant kappa = -20 was emitted as the weight -20 / 0.5 = -40,
    # beyond Omega = 28; each constant now picks a constant state that makes its weight exact
    F = get_format("float6_e3m2fn")
    X, f, h, g = _points_and_targets(F, 7, seed=1)
    net, claim = construct_theorem5("xsig2_expr", F, X, f, h, np.zeros_like(g))
    for layer in net.layers:
        for arr in (layer.weight.data, layer.bias):
            assert all(F.contains(float(v)) for v in arr)
    assert verify(net, claim).ok


def test_the_cli_checks_an_activation_shipped_by_an_entry_point(plugin_dist):
    out = CliRunner().invoke(main, ["check", "xsig2", "float8_e4m3"])
    assert out.exit_code == {True: 0, False: 1, None: 3}[check_activation("xsig2", "float8_e4m3").holds]
    assert "xsig2 on float8_e4m3 (exact implementation)" in out.output
    assert "callable, trusted" in out.output


def test_the_cli_loads_a_plug_in_module_attribute_and_rechecks_its_certificate(tmp_path, monkeypatch, registry):
    (tmp_path / "cliplug_acts.py").write_text("from condcheck.activations import make_activation\n"
                                              "SOFTSIGN = make_activation('softsign_cli', 'x/(1+Abs(x))')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    r = CliRunner()
    out = r.invoke(main, ["--plugin", "cliplug_acts:SOFTSIGN", "check", "softsign_cli", "float8_e4m3", "--json"])
    assert out.exit_code == 0, out.output
    cert = tmp_path / "cert.json"
    cert.write_text(out.output)
    out = r.invoke(main, ["--plugin", "cliplug_acts:SOFTSIGN", "recheck", str(cert)])
    assert out.exit_code == 0 and "certificate re-checked" in out.output
    sys.modules.pop("cliplug_acts", None)


def test_the_cli_reports_an_unloadable_plug_in_in_one_line(registry):
    out = CliRunner().invoke(main, ["--plugin", "no_such_module_xyz:ACT", "check", "relu", "float8_e4m3"])
    assert out.exit_code == 2
    assert "cannot load plug-in 'no_such_module_xyz:ACT'" in out.output
    assert "Traceback" not in out.output


def test_float32_upcast_of_a_callable_rounds_the_trusted_float32_value_again(registry):
    # RN_F(RN_float32(asinh)): with float32's 24 bits against float8's 4 the double rounding can only
    # differ from RN_F at values within 2^-24 (relative) of a float8 rounding boundary; compare with the
    # direct rounding and check the evidence names the double rounding
    register_activation("asinh", function=mpmath.asinh, derivative=asinh_d)
    up, ex = get_rounded("asinh", "float8_e4m3", "float32-upcast").table(), get_rounded("asinh", "float8_e4m3").table()
    F32 = get_format("float32")
    for z, u, e in zip(up.points, up.sigma, ex.sigma):
        with mpmath.workprec(200):
            v32 = round_fraction(Fraction(mpmath.nstr(mpmath.asinh(mpmath.mpf(z)), 60, min_fixed=-1, max_fixed=1)), F32)
        assert u == float(round_fraction(v32, get_format("float8_e4m3")))
    assert np.array_equal(up.sigma, ex.sigma)
    res = check_activation("asinh", "float8_e4m3", "float32-upcast")
    assert "RN_F(RN_float32(.))" in res.conditions["2"]["evidence"]
