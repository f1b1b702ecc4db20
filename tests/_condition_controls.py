"""Shared helpers for the Condition 2/3 tests: negative-control activations and independent re-checkers.

The re-checkers use only the format's fields, ``condcheck.rounding.round_fraction`` and the rounded
activation's certain ``value``/``derivative``; they do not import anything from ``conditions``.
"""
from __future__ import annotations

from fractions import Fraction

import sympy

from condcheck.activations import get_activation, register_activation, x
from condcheck.errors import FormatOverflowError, UnknownNameError
from condcheck.formats import all_formats, get_format
from condcheck.recheck.context import even_last_bit as _even_last_bit   # written from the statement
from condcheck.rounding import round_fraction

SMALL_FORMATS = [f for f in all_formats() if f.bits <= 8]
SIXTEEN_BIT_FORMATS = [f for f in all_formats() if 8 < f.bits <= 16]


def custom_formats(max_bits: int, min_bits: int = 0, max_E: int = 9):
    """The custom IEEE-like formats bM_E with min_bits < M + E + 1 <= max_bits and 2 <= E <= max_E
    (E <= 9: wider exponent ranges do not fit float64, and the exhaustive checkers refuse them)."""
    return [get_format(f"b{M}_{E}") for E in range(2, max_E + 1) for M in range(1, max_bits - E)
            if min_bits < M + E + 1]


#: every custom format of at most 8 bits (b1_2 .. b5_2, b1_3 .. b4_3, ..., b1_6): the default suite
CUSTOM_SMALL_FORMATS = custom_formats(8)
#: the custom formats of 9 to 16 bits with E <= 9 (the slow suite)
CUSTOM_16_BIT_FORMATS = custom_formats(16, min_bits=8)

CONTROLS = {
    "test_identity": sympy.Integer(1) * x,
    "test_constant": sympy.Integer(3),
    "test_heaviside": sympy.Piecewise((0, x < 0), (1, True)),
}


def control(name: str) -> str:
    """Register a negative-control activation once (the registry is process-wide)."""
    try:
        get_activation(name)
    except UnknownNameError:
        register_activation(name, CONTROLS[name], description="negative control for the condition tests")
    return name


def _finite(fn, q):
    try:
        return fn(q)
    except FormatOverflowError:
        return None


def _is_power_of_two(q: Fraction) -> bool:
    q = abs(q)
    return q > 0 and q.numerator & (q.numerator - 1) == 0 and q.denominator & (q.denominator - 1) == 0 and \
        (q.numerator == 1 or q.denominator == 1)


def recheck_condition2(rounded, w) -> list[str]:
    """Every clause of Condition 2 at the witness, from scratch; returns the list of violated clauses."""
    fmt = rounded.format
    bad = []
    T = Fraction(2) ** fmt.e_max
    d0, d1 = Fraction(w.delta_0), Fraction(w.delta_1)
    for q in (d0, d1):
        if not fmt.contains(q):
            bad.append(f"{q} not in format")
    s0, s1 = _finite(rounded.value, d0), _finite(rounded.value, d1)
    g0, g1 = _finite(rounded.derivative, d0), _finite(rounded.derivative, d1)
    if None in (s0, s1, g0, g1):
        return bad + ["overflow at delta_0 or delta_1"]
    if (s0, s1, g0, g1) != (w.sigma_0, w.sigma_1, w.dsigma_0, w.dsigma_1):
        bad.append("reported values differ from a fresh evaluation")
    if not (s0 != s1 and abs(s0) <= T and abs(s1) <= T and abs(s0 - s1) <= T):
        bad.append("(i)")
    k = w.k
    if not (_is_power_of_two(g1) and abs(g1) == Fraction(2) ** k and Fraction(2) ** -fmt.M <= abs(g1) <= 1):
        bad.append("(ii) pass derivative")
    if w.eta_0_unbounded:
        if g0 != 0 or w.eta_0 is not None:
            bad.append("(ii) unbounded eta_0 needs sigma~'(delta_0) = 0")
    else:
        e0 = w.eta_0
        if not (e0 >= 1 and Fraction(2) ** e0 * abs(g0) <= abs(g1)):
            bad.append("(ii) eta_0")
        if Fraction(2) ** (e0 + 1) * abs(g0) <= abs(g1):
            bad.append("(ii) eta_0 is not the largest")
    if not (-k <= w.eta_1 <= fmt.e_max and k <= w.eta_2 <= -fmt.e_min + fmt.M):
        bad.append("(iii)")
    m = max(abs(s0), abs(s1))
    if not (Fraction(2) ** (fmt.e_min + w.eta_2) <= m <= Fraction(2) ** (fmt.e_max - w.eta_1)):
        bad.append("(iv)")
    return bad


def _bounded(rounded, t) -> bool:
    v = _finite(rounded.value, t)
    return v is not None and abs(v) <= Fraction(2) ** rounded.format.e_max


def recheck_condition3(rounded, w) -> list[str]:
    fmt = rounded.format
    bad = []
    z = Fraction(w.zeta)
    if not (fmt.contains(z) and z > 0):
        bad.append("zeta")
    if w.route == "a":
        d = _finite(rounded.derivative, Fraction(0))
        if d is None or abs(d) < Fraction(2) ** -fmt.M:
            bad.append("(a) derivative at 0")
        pts = (-z, Fraction(0), z)
    else:
        x_ = Fraction(w.x)
        if not fmt.contains(x_) or abs(x_) < z or not _even_last_bit(fmt, x_):
            bad.append("(b) x")
        try:
            s = round_fraction(z + abs(x_), fmt)
        except FormatOverflowError:
            return bad + ["(b) zeta + |x| overflows"]
        if s != w.s:
            bad.append("(b) s")
        d = _finite(rounded.derivative, x_)
        if d is None or abs(d) < Fraction(2) ** -fmt.M or _finite(rounded.value, x_) is None:
            bad.append("(b) derivative at x")
        pts = (-s, Fraction(0), s)
    if not all(_bounded(rounded, t) for t in pts):
        bad.append("bounds")
    return bad


def agree(module, recheck, act, fmt):
    """The exhaustive and symbolic checkers of ``module`` agree, and every witness re-checks."""
    from condcheck.rounded_activation import get_rounded
    r = get_rounded(act, fmt)
    ex = module.check_exhaustive(r)
    sy = module.check_symbolic(r)
    assert ex.holds in (True, False)
    # the same verdict: symbolic "holds" from a witness, "fails" only from a certified refutation cover
    assert sy.holds is ex.holds, (act, fmt.name if hasattr(fmt, "name") else fmt, ex.failing_clause, sy.reason)
    if ex.holds is False:
        assert sy.failing_clause == ex.failing_clause
        assert sy.counterexample["refutation"]["cover"]
    for v in (ex, sy):
        if v.holds:
            assert recheck(r, v.witness) == []
    return ex, sy
