"""Condition 1's symbolic checker: the certified range check of the dead tail (conditions/_tail.py)."""
import json
import random
from fractions import Fraction

import mpmath
import pytest
import sympy

from condcheck.activations import BUILTIN_ACTIVATIONS, PAPER_ACTIVATIONS, get_activation, x
from condcheck.check import check_activation
from condcheck.formats import get_format
from condcheck.matrix import MATRIX_FORMATS
from condcheck.recheck import recheck_certificate
from condcheck.rounded_activation import get_rounded
from condcheck.rounding import round_fraction
from conditions import condition1
from conditions._exists import is_smooth, range_has, scan_exists
from conditions._search import candidate_points
from conditions._tail import enclose_interval, rounding_set, scan_dead_tail
from conditions.verdict import exact_value

from _condition_controls import CUSTOM_16_BIT_FORMATS, CUSTOM_SMALL_FORMATS, control

SMALL = [f for f in MATRIX_FORMATS if get_format(f).bits <= 16]


@pytest.mark.parametrize("fmt", SMALL)
def test_symbolic_and_exhaustive_agree_on_every_builtin_and_small_format(fmt):
    for act in BUILTIN_ACTIVATIONS:
        r = get_rounded(act, fmt)
        ex = condition1.check_exhaustive(r)
        sy = condition1.check_symbolic(r)
        assert sy.holds == ex.holds, (act, fmt, ex.failing_clause, sy.reason)
        if ex.holds:
            assert sy.witness.z_dead == ex.witness.z_dead, act
            assert sy.witness.L == ex.witness.L and sy.witness.dead_count == ex.witness.dead_count
            assert condition1.recheck(r, sy.witness) == []
            assert "clause (a) proved by interval arithmetic" in sy.evidence
        else:
            assert sy.failing_clause == ex.failing_clause, act


@pytest.mark.parametrize("fmt", [f.name for f in CUSTOM_SMALL_FORMATS])
def test_symbolic_and_exhaustive_agree_on_every_builtin_and_custom_format(fmt):
    test_symbolic_and_exhaustive_agree_on_every_builtin_and_small_format(fmt)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [f.name for f in CUSTOM_16_BIT_FORMATS])
def test_symbolic_and_exhaustive_agree_on_every_builtin_and_16_bit_custom_format(fmt):
    test_symbolic_and_exhaustive_agree_on_every_builtin_and_small_format(fmt)


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float16", "float6_e2m3fn", "float4_e2m1fn"])
@pytest.mark.parametrize("name, clause", [("test_identity", "(a)"), ("test_constant", "(b)"),
                                          ("test_heaviside", "(e)")])
def test_negative_controls_fail_the_same_clause_symbolically(name, clause, fmt):
    r = get_rounded(control(name), fmt)
    ex, sy = condition1.check_exhaustive(r), condition1.check_symbolic(r)
    assert ex.holds is sy.holds is False
    assert ex.failing_clause == sy.failing_clause and sy.failing_clause.startswith(clause)
    if clause != "(a)":
        assert sy.counterexample["refutation"]["clause"] == clause
        res = recheck_certificate(_certificate(r, sy))
        assert res["ok"] and res["conditions"]["1"] == {"verdict": "fails", "method": "symbolic"}


def _certificate(r, v1):
    """check_activation's certificate with Condition 1 replaced by the verdict v1."""
    from condcheck.certificate import condition_record
    cert = check_activation(r.activation, r.format.name).to_certificate()
    cert["conditions"]["1"] = condition_record("1", json.loads(json.dumps(v1.to_dict())))
    return json.loads(json.dumps(cert))


def test_sigmoid_on_float4_fails_clause_e_symbolically_with_a_refutation_cover():
    # sigmoid' <= 1/4 = omega/2 of float4_e2m1fn, and RN(1/4) = 0 (a tie, to the even 0): no pass state
    v = condition1.check_symbolic(get_rounded("sigmoid", "float4_e2m1fn"))
    assert v.holds is False and v.failing_clause.startswith("(e)")
    ref = v.counterexample["refutation"]
    assert ref["clause"] == "(e)" and ref["function"] == "derivative" and ref["kind"] == "nonzero_pow2"
    # sigmoid' is monotone on [-6, 0] and on [1/2, 6]; at the end 0 the tie sigmoid'(0) = 1/4 is rounded
    # (to the even 0) by certain rounding, which no enclosure of positive width could decide
    assert ref["cover"] == "m[-0x1.8000000000000p+2, 0x0.0p+0] m[0x1.0000000000000p-1, 0x1.8000000000000p+2]"
    assert "clause (e) refuted" in v.evidence


_S = 1 / (1 + sympy.exp(-x))


def _scaled(name, expr):
    from condcheck.activations import make_activation
    return make_activation(name, expr)


def _piecewise_tie(fmt):
    """c * sigmoid with max sigma' = c/4 = omega/2 (a tie), written as a Piecewise of two equal forms,
    so that its derivative is not smooth: no monotonicity, only enclosures and single values."""
    f = get_format(fmt)
    half = Fraction(f.smallest_subnormal) / 2
    c = sympy.Rational(4 * half.numerator, half.denominator)
    return _scaled(f"ptie_{fmt}", sympy.Piecewise((c / (1 + sympy.exp(-x)), x < 0),
                                                  (c * sympy.exp(x) / (sympy.exp(x) + 1), True)))


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2", "float6_e3m2fn"])
def test_the_refutation_resolves_the_tie_and_fails_just_above_it(fmt):
    f = get_format(fmt)
    half = Fraction(f.smallest_subnormal) / 2
    c = sympy.Rational(4 * half.numerator, half.denominator)          # max sigma' = c/4 = omega/2: a tie
    eps = sympy.Rational(1, 2 ** 10)
    tie = get_rounded(_scaled(f"tie_{fmt}", c * _S), fmt)
    above = get_rounded(_scaled(f"above_{fmt}", c * (1 + eps) * _S), fmt)
    # the tie: sigma~' = 0 everywhere, proved, and the exhaustive checker agrees
    sc = scan_exists(tie, "derivative", "nonzero_pow2")
    assert sc.status == "refuted"
    assert condition1.check_exhaustive(tie).failing_clause.startswith("(e)")
    sy = condition1.check_symbolic(tie)
    assert sy.holds is False and sy.failing_clause.startswith("(e)")
    # just above the tie: max sigma' rounds to omega, a nonzero power of two, so nothing is refuted
    sc = scan_exists(above, "derivative", "nonzero_pow2")
    assert sc.status == "witness" and sc.witness_value == f.smallest_subnormal
    assert above.derivative(sc.witness) == f.smallest_subnormal
    assert condition1.check_symbolic(above).holds is condition1.check_exhaustive(above).holds is True
    # the same tie without monotonicity (a Piecewise derivative): enclosures and single values refute it
    pt = get_rounded(_piecewise_tie(fmt), fmt)
    assert not is_smooth(pt.activation.derivative)
    sc = scan_exists(pt, "derivative", "nonzero_pow2")
    assert sc.status == "refuted" and sc.by_monotonicity == 0 and sc.points > 0
    assert condition1.check_symbolic(pt).failing_clause == condition1.check_exhaustive(pt).failing_clause


def test_a_pass_state_off_the_candidate_points_is_found_not_refuted():
    # the peak of sigma' at 9/8 (no candidate point) is the only value where sigma~' != 0
    fmt = "float8_e4m3"
    act = _scaled("peak98", sympy.Rational(1, 2 ** 8) * (1 + sympy.Rational(1, 2 ** 10))
                  / (1 + sympy.exp(-(x - sympy.Rational(9, 8)))))
    r = get_rounded(act, fmt)
    assert Fraction(9, 8) not in set(candidate_points(get_format(fmt)))
    ex = condition1.check_exhaustive(r)
    sy = condition1.check_symbolic(r)
    assert ex.holds is sy.holds is True
    assert sy.witness.pass_state == ex.witness.pass_state == Fraction(9, 8)
    assert "found 1.125 by the certified scan" in sy.evidence


def test_a_capped_existence_scan_is_undecided_never_fails():
    # a cap on interval evaluations that lets the tail finish but not the refutation (the piecewise tie
    # below needs about 10 for its tail and over 100 for the refutation)
    r = get_rounded(_piecewise_tie("float8_e4m3"), "float8_e4m3")
    full = scan_exists(r, "derivative", "nonzero_pow2")
    assert full.status == "refuted"
    m = scan_dead_tail(r).intervals + 2
    assert m < full.intervals and scan_dead_tail(r, max_intervals=m).status == "dead-to"
    assert scan_exists(r, "derivative", "nonzero_pow2", max_intervals=m).status == "undecided"
    v = condition1.check_symbolic(r, max_intervals=m)
    assert v.holds is None and "cap reached" in v.reason and "clause (e)" in v.reason
    assert "clause (a) proved" in v.evidence


def test_range_has_counts_ties_and_overflow_exactly():
    f = get_format("float4_e2m1fn")
    inf = float("inf")
    assert not range_has("nonzero_pow2", Fraction(0), Fraction(0), f)
    assert range_has("nonzero_pow2", Fraction(0), Fraction(1, 2), f)
    assert range_has("nonzero_pow2", Fraction(-3), Fraction(-3), f) is False
    assert range_has("nonzero_pow2", Fraction(-3), Fraction(-2), f)
    assert range_has("positive_pow2", Fraction(-4), Fraction(-1, 2), f) is False
    assert range_has("positive_pow2", Fraction(3), inf, f) is True          # 4 is between 3 and Omega
    assert range_has("zero", inf, inf, f) is False                          # overflow only: no finite value
    assert range_has("finite_not_L", Fraction(0), Fraction(0), f, Fraction(0)) is False
    assert range_has("finite_not_L", Fraction(0), Fraction(1, 2), f, Fraction(0)) is True
    assert range_has("finite_not_L", -inf, -inf, f, Fraction(0)) is False


def test_monotonicity_is_used_only_for_smooth_expressions():
    assert is_smooth(get_activation("sigmoid").derivative) and is_smooth(get_activation("gelu").expr)
    for act in ("relu", "elu", "leaky_relu", "selu"):
        assert not is_smooth(get_activation(act).expr), act
    assert not is_smooth(sympy.Abs(x)) and not is_smooth(sympy.Heaviside(x)) and not is_smooth(sympy.Max(x, 0))


@pytest.mark.parametrize("fmt", ["float32", "float64"])
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_paper_activations_hold_on_float32_and_float64_with_a_proved_tail(act, fmt):
    r = get_rounded(act, fmt)
    v = condition1.check_symbolic(r)
    assert v.holds is True, v.reason
    w = v.witness
    f = get_format(fmt)
    assert "clause (a) proved by interval arithmetic" in v.evidence
    assert w.z_dead >= -f.max / 2
    # z_d is the largest value of the tail: it is dead and the next value is not (certain rounding)
    assert r.value(w.z_dead) == w.L and r.derivative(w.z_dead) == 0
    nxt = f.next_up(w.z_dead)
    assert r.value(nxt) != w.L or r.derivative(nxt) != 0
    # the cover starts at -Omega and its intervals follow each other value by value up to z_d
    cover = w.tail_cover
    assert cover[0][0] == -f.max and cover[-1][1] == w.z_dead
    for (a0, b0), (a1, b1) in zip(cover, cover[1:]):
        assert a1 == f.next_up(b0) and a0 <= b0
    assert len(cover) < 200


def test_relu_tail_ends_at_zero_and_gelu_float32_tail_at_its_known_value():
    assert condition1.check_symbolic(get_rounded("relu", "float64")).witness.z_dead == 0
    w = condition1.check_symbolic(get_rounded("gelu", "float32")).witness
    assert float(w.z_dead) == -14.541349411010742 and w.L == 0


@pytest.mark.parametrize("fmt", ["float64", "float32", "b10_8", "bfloat16", "float8_e4m3"])
def test_leaky_relu_is_never_certified_and_fails_at_minus_omega(fmt):
    v = condition1.check_symbolic(get_rounded("leaky_relu", fmt))
    assert v.holds is False and v.failing_clause.startswith("(a)")
    assert "most negative value is not dead" in v.counterexample["why"]


def test_a_planted_tail_one_value_too_long_is_refuted_at_that_value():
    r = get_rounded("gelu", "float32")
    f = r.format
    z_d = condition1.check_symbolic(r).witness.z_dead
    ok = scan_dead_tail(r, up_to=z_d)
    assert ok.status == "dead-to" and ok.first_live is None and ok.z_dead == z_d
    bad = scan_dead_tail(r, up_to=f.next_up(z_d))
    assert bad.status == "dead-to" and bad.first_live == f.next_up(z_d) and bad.z_dead == z_d


def test_a_certificate_claiming_a_longer_tail_is_rejected_by_recheck():
    cert = check_activation("gelu", "float32").to_certificate()
    assert recheck_certificate(cert)["ok"]
    f = get_format("float32")
    w = cert["conditions"]["1"]["witness"]
    z = Fraction(w["z_dead"]["fraction"])
    w["z_dead"] = exact_value(f.next_up(z), f)
    old_end = exact_value(z, f)["hex"]
    assert w["tail_cover"].endswith(f", {old_end}]")
    w["tail_cover"] = w["tail_cover"][:-len(old_end) - 1] + exact_value(f.next_up(z), f)["hex"] + "]"
    res = recheck_certificate(json.loads(json.dumps(cert)))
    assert not res["ok"] and res["problem"]["statement"].startswith("conditions.1.witness")


def test_caps_give_an_undecided_verdict_with_the_reason():
    v = condition1.check_symbolic(get_rounded("gelu", "float64"), max_intervals=3)
    assert v.holds is None and "cap reached" in v.reason


def test_other_implementations_stay_undecided_with_the_reason():
    v = condition1.check_symbolic(get_rounded("gelu", "bfloat16", "float32-upcast"))
    assert v.holds is None and "correctly rounded ('exact') implementation only" in v.reason


def test_check_gelu_float32_prints_the_real_verdict():
    from click.testing import CliRunner
    from condcheck.cli import main
    res = CliRunner().invoke(main, ["check", "gelu", "float32"])
    out = res.output
    assert res.exit_code == 0, out
    assert "gelu on float32 (exact implementation): HOLDS" in out
    assert "Condition 1 for gelu in float32 (exact, symbolic): holds" in out


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float4_e2m1fn", "float16", "float32"])
@pytest.mark.parametrize("v", ["0", "1", "-1", "max", "-max", "small"])
def test_rounding_sets_are_exact_at_their_ends(fmt, v):
    f = get_format(fmt)
    val = {"0": Fraction(0), "1": Fraction(1), "-1": Fraction(-1), "max": f.max, "-max": -f.max,
           "small": f.smallest_subnormal}[v]
    s = rounding_set(f, val)

    def rounds(y):
        try:
            return round_fraction(y, f) == val
        except Exception:
            return False
    assert rounds(s.lo) == s.lo_closed and rounds(s.hi) == s.hi_closed
    tiny = (s.hi - s.lo) / 2 ** 20
    assert rounds(s.lo + tiny) and rounds(s.hi - tiny) and not rounds(s.lo - tiny) and not rounds(s.hi + tiny)
    if val == 0:
        assert s.lo_closed and s.hi_closed and s.hi == f.smallest_subnormal / 2    # the tie goes to even 0


def _intervals(rng):
    out = [(-5, -1), (-1, 0), (-Fraction(1, 3), Fraction(1, 7)), (0, 2), (-40, -39), (-40, -3), (3, 60),
           (-Fraction(1, 2 ** 40), Fraction(1, 2 ** 41))]
    for _ in range(12):
        e = rng.randint(-20, 4)
        a = Fraction(rng.randint(-2 ** 20, 2 ** 20), 2 ** 20) * 2 ** e
        out.append((a, a + Fraction(rng.randint(1, 2 ** 20), 2 ** 20) * 2 ** (e - rng.randint(0, 6))))
    return out


@pytest.mark.parametrize("act", BUILTIN_ACTIVATIONS)
def test_interval_enclosures_contain_sigma_and_its_derivative_at_sample_points(act):
    rng = random.Random(act)
    a_ = get_activation(act)
    for expr in (a_.expr, a_.derivative):
        f = sympy.lambdify(x, expr, "mpmath")
        for a, b in _intervals(rng):
            a, b = Fraction(a), Fraction(b)
            lo, hi = enclose_interval(expr, a, b, prec=72)
            lo, hi = mpmath.mp.make_mpf(lo), mpmath.mp.make_mpf(hi)      # exact, not rounded
            assert lo <= hi
            pts = [a, b] + [a + (b - a) * Fraction(rng.randint(0, 2 ** 16), 2 ** 16) for _ in range(6)]
            for q in pts:
                # the reference: the expression as written, at 10000 bits (enough against the
                # cancellation in 1 + erf, 1 + tanh down to x = -40; sympy's N is not reliable there)
                with mpmath.workprec(10000):
                    v = f(mpmath.mpf(q.numerator) / q.denominator)
                    assert lo <= v <= hi, (act, expr, float(a), float(b), float(q))


@pytest.mark.parametrize("act", BUILTIN_ACTIVATIONS)
def test_far_tail_interval_enclosures_meet_the_point_enclosures_inside_them(act):
    # far out (down to -2^1000) a naive reference is out of reach; the point enclosures of
    # condcheck.intervals (tested against 200-bit values in tests/test_intervals.py) must overlap
    from condcheck.intervals import compile_expression
    import mpmath.libmp as L
    rng = random.Random(act + "far")
    a_ = get_activation(act)
    for expr in (a_.expr, a_.derivative):
        comp = compile_expression(expr)
        for a, b in [(-800, -700), (-2 ** 70, -2 ** 69), (-2 ** 1000, -2 ** 999), (-2 ** 1023, -30)]:
            a, b = Fraction(a), Fraction(b)
            lo, hi = enclose_interval(expr, a, b, prec=72)
            for q in [a, b] + [a + (b - a) * Fraction(rng.randint(0, 2 ** 16), 2 ** 16) for _ in range(4)]:
                plo, phi = comp.enclose_mp_raw(q, 72)
                assert L.mpf_le(lo, phi) and L.mpf_ge(hi, plo), (act, expr, float(a), float(b), float(q))
