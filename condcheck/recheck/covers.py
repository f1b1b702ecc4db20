"""The proof objects of symbolic certificates, re-proved: dead-tail covers, refutation covers, pair covers.

Shared with the checkers: the interval enclosure of an expression over a real interval
(``conditions._tail.enclose_interval``, part of the certain evaluation) and the rounding of its ends
(``RN_F``, monotone).  The logic -- that the intervals follow each other value by value, and what each
interval's ranges exclude -- is written here again.

* **tail cover** ``[a, b] ...``: from -Omega to z_d; each interval is dead: both ends of the enclosure of
  sigma over [a, b] round to L and both ends of sigma''s to 0 (every real between rounds likewise);
  a single value by certain rounding.
* **refutation cover** ``e[a, b] m[c, d] p[z, z] ...``: from -Omega to Omega; no value of the interval
  rounds (sigma~ or sigma~') to a value of the refuted kind: ``e`` by the rounded ends of the enclosure,
  ``m`` by monotonicity (the expression is smooth -- built from +, *, constant powers and exp, log, erf,
  erfc, tanh, sinh, cosh, atan, asinh, sin, cos -- and the enclosure of its sympy derivative, as
  differentiated or factored, has one sign; then the values lie between the certain roundings at a
  and b), ``p`` one value by certain rounding.
* **pair cover** (Condition 2): from -Omega to Omega; the ranges of sigma~ and sigma~' over each interval
  (as above; ``m`` intersects the enclosure's range with the monotone one), and then for every exponent
  k a pass state 2^k may have at the stage, no interval whose sigma~' range holds +-2^k (a possible
  delta_1) is *compatible* with one whose sigma~' range meets [-2^(k-1), 2^(k-1)] (a possible delta_0):
  some reals s_1, s_0 in their sigma~ ranges clipped to [-2^e_max, 2^e_max] with s_0 != s_1,
  |s_0 - s_1| <= 2^e_max and, at stage (iv), 2^(e_min+k) <= max(|s_0|, |s_1|) <= 2^(e_max+k).  The values
  of F are among those reals, so no pair of F x F satisfies the clauses.

Covers are re-proved for the correctly rounded ("exact") implementation of a sympy expression only.
"""
from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..errors import CondcheckError
from .context import Rejected, exact_text, text
from .schema import COVER_ITEM, TAIL_ITEM

_INF = float("inf")


def _precision(fmt) -> int:
    return max(64, 2 * (fmt.M + 1) + 24)


def _round_ends(lo, hi, fmt):
    from ..rounded_activation import round_end
    try:
        return round_end(lo, fmt), round_end(hi, fmt)
    except CondcheckError:                       # NaN in the enclosure: nothing is known
        return -_INF, _INF


def _enclose(expr, a, b, fmt):
    from conditions._tail import enclose_interval
    return enclose_interval(expr, a, b, _precision(fmt))


def _smooth(expr) -> bool:
    import sympy
    fns = (sympy.exp, sympy.log, sympy.erf, sympy.erfc, sympy.tanh, sympy.sinh, sympy.cosh, sympy.atan,
           sympy.asinh, sympy.sin, sympy.cos)
    for e in sympy.preorder_traversal(expr):
        if e.is_Symbol or e.is_Number or isinstance(e, sympy.NumberSymbol) or isinstance(e, (sympy.Add, sympy.Mul)):
            continue
        if isinstance(e, sympy.Pow) and e.args[1].is_number:
            continue
        if isinstance(e, fns) and len(e.args) == 1:
            continue
        return False
    return True


@lru_cache(maxsize=64)
def _slopes(expr) -> tuple:
    """sympy's derivative of a smooth expression, as differentiated and factored (else ())."""
    import sympy

    from ..activations import x as X
    if not _smooth(expr):
        return ()
    d = sympy.diff(expr, X)
    out = [d]
    try:
        f = sympy.factor(d)
        if _smooth(f):
            out.append(f)
    except Exception:                         # factoring only helps the interval arithmetic
        pass
    return tuple(out)


def _one_sign(slopes, a, b, fmt) -> bool:
    import mpmath.libmp as M
    for d in slopes:
        lo, hi = _enclose(d, a, b, fmt)
        if all(t not in (M.finf, M.fninf, M.fnan) for t in (lo, hi)) and (M.mpf_ge(lo, M.fzero) or M.mpf_le(hi, M.fzero)):
            return True
    return False


def needs_expression(ctx, path: str) -> None:
    act = ctx.rounded.activation
    if act.expr is None or ctx.rounded.implementation != "exact":
        raise Rejected(path, "a cover is re-proved for the correctly rounded ('exact') implementation of a sympy "
                             "expression only; this certificate's sigma~ is neither, so its cover cannot be re-proved")


def parse_cover(ctx, cover, path: str, tagged: bool, end: Fraction) -> list:
    """[(tag, a, b)] of a cover text that starts at -Omega, follows value by value and ends at ``end``."""
    if not isinstance(cover, str) or not cover:
        raise Rejected(path, "must be a non-empty cover text")
    pattern = COVER_ITEM if tagged else TAIL_ITEM
    items = pattern.findall(cover)
    joined = " ".join(f"{t[0]}[{t[1]}, {t[2]}]" if tagged else f"[{t[0]}, {t[1]}]" for t in items)
    if joined != cover:
        raise Rejected(path, "is not a list of intervals " + ("tag[a, b] (tag e, m or p)" if tagged else "[a, b]")
                       + " separated by single spaces")
    fmt = ctx.fmt
    out, expect = [], -ctx.omega
    for n, t in enumerate(items):
        tag, ta, tb = t if tagged else ("", *t)
        a, b = exact_text(ta, f"{path} interval {n + 1}"), exact_text(tb, f"{path} interval {n + 1}")
        where = f"{path} interval {n + 1} [{ta}, {tb}]"
        if not fmt.contains(a) or not fmt.contains(b):
            raise Rejected(where, f"its ends are not values of {fmt.name}")
        if a != expect:
            raise Rejected(where, f"does not continue the cover: it should start at {text(expect)}")
        if b < a or b > end:
            raise Rejected(where, f"does not continue the cover: it should end between its start and {text(end)}")
        if tag == "p" and a != b:
            raise Rejected(where, "a single-value entry p[...] has two different ends")
        out.append((tag, a, b))
        if b == end:
            if n + 1 != len(items):
                raise Rejected(path, f"goes on after {text(end)}")
            return out
        expect = fmt.next_up(b)
    raise Rejected(path, f"ends before {text(end)}")


def tail_cover(ctx, cover, path: str, z_dead: Fraction, L: Fraction) -> None:
    """Every value from -Omega to z_d is dead (sigma~ = L, sigma~' = 0), interval by interval."""
    needs_expression(ctx, path)
    act, fmt = ctx.rounded.activation, ctx.fmt
    for _, a, b in parse_cover(ctx, cover, path, False, z_dead):
        where = f"{path} [{text(a)}, {text(b)}]"
        if a == b:
            ctx.claim(ctx.sigma(a) == L and ctx.dsigma(a) == 0, where, "the value is not dead")
            continue
        for expr, target in ((act.expr, L), (act.derivative, Fraction(0))):
            r = _round_ends(*_enclose(expr, a, b, fmt), fmt)
            ctx.claim(r == (target, target), where, "not proved dead: the enclosure's ends round to "
                      f"{text(r[0]) if r[0] not in (_INF, -_INF) else r[0]} and "
                      f"{text(r[1]) if r[1] not in (_INF, -_INF) else r[1]}, not both to {text(target)}")


def range_has(kind: str, lo, hi, fmt, L=None) -> bool:
    """Does the closed range [lo, hi] of format values (+-inf: overflow) hold a value of ``kind``?"""
    om = Fraction(fmt.max)
    if lo == _INF or hi == -_INF:
        return False
    a = -om if lo == -_INF else max(Fraction(lo), -om)
    b = om if hi == _INF else min(Fraction(hi), om)
    if a > b:
        return False
    if kind == "zero":
        return a <= 0 <= b
    if kind == "finite_not_L":
        return not (a == b == L)

    def pow2_between(u, v):                      # a power of two of fmt in [u, v], 0 <= u
        u = max(u, Fraction(fmt.smallest_subnormal))
        p = Fraction(2) ** (u.numerator.bit_length() - u.denominator.bit_length() - 1)
        while p < u:
            p *= 2
        while p <= v and p <= om:
            if p >= u and fmt.contains(p):
                return True
            p *= 2
        return False

    def signed_pow2(t, u):                       # +-2^k with t <= 2^k <= u
        return (b >= t and pow2_between(max(a, t), min(b, u))) or (a <= -t and pow2_between(max(-b, t), min(-a, u)))
    if kind == "pass_pow2":
        return signed_pow2(Fraction(1, 2 ** fmt.M), Fraction(1))
    if kind == "pass_pow2_iii":
        lo_k, hi_k = max(-fmt.M, -fmt.e_max), min(0, -fmt.e_min + fmt.M)
        return lo_k <= hi_k and signed_pow2(Fraction(2) ** lo_k, Fraction(2) ** hi_k)
    if kind == "abs_at_least_2^-M":
        t = Fraction(1, 2 ** fmt.M)
        return b >= t or a <= -t
    if kind == "positive_pow2":
        return b > 0 and pow2_between(max(a, Fraction(0)), b)
    if kind == "nonzero_pow2":
        return (b > 0 and pow2_between(max(a, Fraction(0)), b)) or (a < 0 and pow2_between(max(-b, Fraction(0)), -a))
    raise ValueError(kind)


def refutation_cover(ctx, cover, path: str, function: str, kind: str, L=None) -> None:
    """No value from -Omega to Omega rounds to a value of ``kind`` (g = sigma or sigma')."""
    needs_expression(ctx, path)
    act, fmt = ctx.rounded.activation, ctx.fmt
    g = act.expr if function == "sigma" else act.derivative
    point = ctx.sigma if function == "sigma" else ctx.dsigma
    slopes = None
    for tag, a, b in parse_cover(ctx, cover, path, True, ctx.omega):
        where = f"{path} {tag}[{text(a)}, {text(b)}]"
        if tag == "p":
            q = point(a)
            ctx.claim(q is None or not range_has(kind, q, q, fmt, L), where, f"the clause holds at {text(a)}: "
                      f"the refutation is wrong")
        elif tag == "e":
            rl, rh = _round_ends(*_enclose(g, a, b, fmt), fmt)
            ctx.claim(not range_has(kind, rl, rh, fmt, L) and not (rl == -_INF and rh == _INF), where,
                      "the enclosure does not exclude the kind of value the clause asks for")
        else:
            if slopes is None:
                slopes = _slopes(g)
            ctx.claim(bool(slopes) and _one_sign(slopes, a, b, fmt), where,
                      "the derivative's sign over the interval is not proved (monotonicity needs a smooth "
                      "expression and a derivative enclosure of one sign)")
            qa, qb = point(a), point(b)
            ctx.claim(qa is not None and qb is not None and not range_has(kind, min(qa, qb), max(qa, qb), fmt, L),
                      where, "the rounded ends do not exclude the kind of value the clause asks for")


def _pair_ranges(ctx, tag, a, b, slopes):
    """The ranges of sigma~ and sigma~' over the values of [a, b] (see the module docstring)."""
    act, fmt = ctx.rounded.activation, ctx.fmt
    out = []
    for deriv, g, point in ((False, act.expr, ctx.sigma), (True, act.derivative, ctx.dsigma)):
        if tag == "p":
            q = point(a)
            out.append((q, q) if q is not None else (_INF, -_INF))
            continue
        r = _round_ends(*_enclose(g, a, b, fmt), fmt)
        if tag == "m" and slopes[deriv] and _one_sign(slopes[deriv], a, b, fmt):
            qa, qb = point(a), point(b)
            if qa is not None and qb is not None:
                r = (max(r[0], min(qa, qb)), min(r[1], max(qa, qb)))
        out.append(r)
    return out


def _compatible(r0, r1, T, lo) -> bool:
    """Reals s_0 in r0, s_1 in r1 with s_0 != s_1, |s_0 - s_1| <= T, max(|s_0|, |s_1|) >= lo?"""
    def big(r):
        return [(x, y) for x, y in ((max(r[0], lo), r[1]), (r[0], min(r[1], -lo))) if x <= y]

    def close(u, v):
        return max(u[0] - v[1], v[0] - u[1]) <= T and not (u[0] == u[1] == v[0] == v[1])
    return any(close(u, r1) for u in big(r0)) or any(close(r0, v) for v in big(r1))


def pair_cover(ctx, cover, path: str, stage: int) -> None:
    """No pair of values satisfies Condition 2's clauses (i)..(stage)."""
    needs_expression(ctx, path)
    act, fmt = ctx.rounded.activation, ctx.fmt
    slopes = {False: _slopes(act.expr), True: _slopes(act.derivative)}
    ranges = [_pair_ranges(ctx, tag, a, b, slopes) for tag, a, b in parse_cover(ctx, cover, path, True, ctx.omega)]
    T, om = ctx.T, ctx.omega
    ks = range(-fmt.M, 1)
    if stage >= 3:
        ks = [k for k in ks if -k <= fmt.e_max and k <= -fmt.e_min + fmt.M]
    for k in ks:
        p, h = Fraction(2) ** k, Fraction(2) ** (k - 1)
        lo = Fraction(2) ** (fmt.e_min + k) if stage >= 4 else Fraction(0)
        hi = min(T, Fraction(2) ** (fmt.e_max + k)) if stage >= 4 else T
        P, B = set(), set()
        for s, d in ranges:
            sl, sh = max(s[0], -hi), min(s[1], hi)
            dl, dh = max(d[0], -om), min(d[1], om)
            if sl > sh or dl > dh:
                continue
            if dl <= p <= dh or dl <= -p <= dh:
                P.add((Fraction(sl), Fraction(sh)))
            if dl <= h and dh >= -h:
                B.add((Fraction(sl), Fraction(sh)))
        for r1 in P:
            for r0 in B:
                ctx.claim(not _compatible(r0, r1, T, lo), path,
                          f"the cover does not exclude k = {k}: a possible delta_1 with sigma~ in [{text(r1[0])}, "
                          f"{text(r1[1])}] and a possible delta_0 with sigma~ in [{text(r0[0])}, {text(r0[1])}] are "
                          f"compatible")
