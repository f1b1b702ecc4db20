"""``condcheck recheck CERT.json``: re-check a condition certificate without the search code.

Shared with the checkers: only the format (``condcheck.formats``), exact rounding
(``condcheck.rounding``) and the certain evaluation of sigma~ and sigma~' (``RoundedActivation.value``
and ``.derivative``).  Everything else -- reading the witness, every clause of Conditions 1, 2 and 3 --
is written again here, from the statements, on exact rationals.

What is re-checked: every "holds" verdict, clause by clause at its witness, including Condition 1's
"for every z <= z_d": by walking every value of the format up to z_d (formats of at most 16 bits), or,
for wider formats, from the certificate's ``tail_cover``: its intervals must follow each other value by
value from -Omega to z_d, and each must round to L and to 0 over the whole interval (the interval
enclosure of sigma and sigma' over it, ``conditions._tail.enclose_interval``, shared with the checker as
part of the certain evaluation; its ends are rounded here with ``RN_F``, which is monotone, so both
ends rounding to L means every real between them does).
The witness values are also compared with their hex strings and bit patterns, so a certificate whose
fields disagree with each other is rejected.

A "fails" verdict is a statement about every value of the format.  A symbolic "fails" is re-proved:
Condition 1's clause (a) at its counterexample point (not dead, and at most -Omega/2); Condition 1's
clauses (b)-(e), Condition 2's "no delta_1 with sigma~'(delta_1) = +-2^k, 2^-M <= 2^k <= 1" (clause (ii);
with also -k <= e_max and k <= -e_min + M, clause (iii)) and
Condition 3's route (b) "|sigma~'| < 2^-M everywhere" (route (a) at the point 0) from the certificate's
refutation cover; Condition 2's pair refutations (no pair satisfies clauses (i)..(s), s = (ii), (iii) or
(iv), ``refutation.kind == "pairs"``) from their pair cover, every range recomputed and the
compatibility of every possible pass interval with every possible shrinking interval decided again
(:func:`_pair_cover`), and the pair given for the clauses before (s) checked clause by clause (``counterexample.refutation.cover``, see ``conditions._exists``):
its intervals must follow each other value by value from -Omega to Omega, and each must exclude the
kind of value the clause asks for: ``p`` a single value by certain rounding, ``e`` the interval enclosure
of sigma (or sigma') with both ends rounded by ``RN_F``, ``m`` monotonicity (the expression is smooth,
checked again here, and the enclosure of its sympy derivative, as differentiated or factored, over the
interval has one sign) with the
certain roundings at both ends.  Exhaustive "fails" verdicts are reported as not re-checked.
Undecided verdicts have nothing to check.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction

from .errors import CondcheckError, FormatOverflowError
from .formats import get_format
from .rounded_activation import get_rounded
from .rounding import round_fraction


def _pow2(q: Fraction) -> bool:
    a = abs(q)
    return a > 0 and a.numerator & (a.numerator - 1) == 0 and a.denominator & (a.denominator - 1) == 0


class _Ctx:
    def __init__(self, cert):
        try:
            self.fmt = get_format(cert["format"])
            self.r = get_rounded(cert["activation"], self.fmt, cert.get("implementation", "exact"))
        except KeyError as e:
            raise CondcheckError(f"certificate has no {e.args[0]!r} field") from None
        self.T = Fraction(2) ** self.fmt.e_max

    def num(self, w, key):
        """The exact value of a witness field, cross-checked against its hex string and bit pattern."""
        try:
            v = w[key]
            q = Fraction(v["fraction"])
        except (KeyError, TypeError, ValueError):
            raise CondcheckError(f"witness field {key!r} is missing or malformed") from None
        if Fraction(float.fromhex(v["hex"])) != q:
            raise CondcheckError(f"witness field {key!r}: hex {v['hex']} and fraction {v['fraction']} differ")
        if not self.fmt.contains(q):
            raise CondcheckError(f"witness field {key!r} = {v['fraction']} is not a value of {self.fmt.name}")
        if self.fmt.bits_text(q) != v["bits"]:
            raise CondcheckError(f"witness field {key!r}: bits {v['bits']} do not encode {v['fraction']}")
        return q

    def val(self, q):
        try:
            return self.r.value(q)
        except FormatOverflowError:
            return None

    def der(self, q):
        try:
            return self.r.derivative(q)
        except FormatOverflowError:
            return None


def _hex_value(text: str) -> Fraction:
    """The exact value of a hexadecimal float text (``float.hex`` style or ``0x<int>p<exp>``)."""
    t = text.strip()
    neg = t.startswith("-")
    t = t.lstrip("+-")
    if not t.lower().startswith("0x") or "p" not in t.lower():
        raise CondcheckError(f"not a hexadecimal float: {text!r}")
    mant, exp = t[2:].lower().split("p")
    e = int(exp)
    if "." in mant:
        ip, fp = mant.split(".")
        n = int(ip + fp, 16) if (ip + fp) else 0
        e -= 4 * len(fp)
    else:
        n = int(mant, 16)
    q = Fraction(n) * Fraction(2) ** e
    return -q if neg else q


def _tail_cover(c: _Ctx, w, zd: Fraction, L: Fraction) -> list[str]:
    from conditions._tail import enclose_interval
    from .rounded_activation import _round_end
    fmt, act = c.fmt, c.r.activation
    text = w.get("tail_cover") if isinstance(w, dict) else None
    if not text or not isinstance(text, str):
        return ["(a) the tail of a format wider than 16 bits needs a tail_cover in the certificate"]
    cover = re.findall(r"\[\s*([^,\]\s]+)\s*,\s*([^\]\s]+)\s*\]", text)
    if not cover:
        return ["(a) the certificate's tail_cover has no intervals"]
    if act.expr is None or c.r.implementation != "exact":
        return ["(a) a tail_cover is re-checked for the correctly rounded implementation of an expression only"]
    expect = -Fraction(fmt.max)
    prec = max(64, 2 * (fmt.M + 1) + 24)
    for pair in cover:
        a, b = _hex_value(pair[0]), _hex_value(pair[1])
        if a != expect or b < a or not fmt.contains(a) or not fmt.contains(b) or b > zd:
            return [f"(a) tail_cover interval [{float(a)!r}, {float(b)!r}] does not continue the cover "
                    f"(expected it to start at {float(expect)!r} and end at most at z_d)"]
        if a == b:
            if c.val(a) != L or c.der(a) != 0:
                return [f"(a) z = {float(a)!r} <= z_d is not dead"]
        else:
            for expr, target in ((act.expr, L), (act.derivative, Fraction(0))):
                lo, hi = enclose_interval(expr, a, b, prec)
                if _round_end(lo, fmt) != target or _round_end(hi, fmt) != target:
                    return [f"(a) tail_cover interval [{float(a)!r}, {float(b)!r}] is not proved dead"]
        if b == zd:
            return []
        expect = fmt.next_up(b)
    return [f"(a) the tail_cover ends before z_d"]


def _condition1(c: _Ctx, w) -> list[str]:
    bad = []
    fmt = c.fmt
    zd, L = c.num(w, "z_dead"), c.num(w, "L")
    if zd < -Fraction(fmt.max) / 2:
        bad.append("(a) z_d < -Omega/2")
    if not fmt.enumerable or fmt.bits > 16:
        bad += _tail_cover(c, w, zd, L)
    else:
        for v in fmt.values():
            q = Fraction(float(v))
            if q > zd:
                break
            if c.val(q) != L or c.der(q) != 0:
                bad.append(f"(a) z = {float(q)!r} <= z_d is not dead")
                break
    live = c.num(w, "live")
    if not (live > zd and c.val(live) is not None and c.val(live) != L):
        bad.append("(b) live state")
    s = c.val(c.num(w, "constant"))
    if s is None or s <= 0 or not _pow2(s):
        bad.append("(c) constant state")
    if c.val(c.num(w, "zero")) != 0:
        bad.append("(d) zero state")
    p = c.num(w, "pass")
    d = c.der(p)
    if not (p > zd and d is not None and _pow2(d)):
        bad.append("(e) pass state")
    return bad


def _smooth(expr) -> bool:
    """Built only from numbers, x, +, *, constant powers, exp, log, erf, erfc, tanh, sinh, cosh, atan,
    asinh, sin, cos (continuous wherever finite): the premise of a monotonicity interval."""
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


def _kind_in(fmt, kind, lo, hi, L) -> bool:
    """Is a value of ``kind`` among the finite values of fmt between lo and hi (+-inf: overflow)?"""
    om = Fraction(fmt.max)
    inf = float("inf")
    if lo == inf or hi == -inf:
        return False
    a = -om if lo == -inf else max(Fraction(lo), -om)
    b = om if hi == inf else min(Fraction(hi), om)
    if a > b:
        return False
    if kind == "zero":
        return a <= 0 <= b
    if kind == "finite_not_L":
        return not (a == b == L)

    def pow2_between(u, v):            # a power of two of fmt in [u, v], 0 <= u
        u = max(u, Fraction(fmt.smallest_subnormal))
        p = Fraction(2) ** (u.numerator.bit_length() - u.denominator.bit_length() - 1)
        while p < u:
            p *= 2
        while p <= v and p <= om:
            if p >= u and fmt.contains(p):
                return True
            p *= 2
        return False
    if kind == "pass_pow2":                 # +-2^k with 2^-M <= 2^k <= 1
        t = Fraction(1, 2 ** fmt.M)
        return (b >= t and pow2_between(max(a, t), min(b, Fraction(1)))) or \
            (a <= -t and pow2_between(max(-b, t), min(-a, Fraction(1))))
    if kind == "pass_pow2_iii":             # and -k <= e_max, k <= -e_min + M
        lo_k, hi_k = max(-fmt.M, -fmt.e_max), min(0, -fmt.e_min + fmt.M)
        if lo_k > hi_k:
            return False
        t, u = Fraction(2) ** lo_k, Fraction(2) ** hi_k
        return (b >= t and pow2_between(max(a, t), min(b, u))) or \
            (a <= -t and pow2_between(max(-b, t), min(-a, u)))
    if kind == "abs_at_least_2^-M":
        t = Fraction(1, 2 ** fmt.M)
        return b >= t or a <= -t
    if kind == "positive_pow2":
        return b > 0 and pow2_between(max(a, Fraction(0)), b)
    if kind == "nonzero_pow2":
        return (b > 0 and pow2_between(max(a, Fraction(0)), b)) or (a < 0 and pow2_between(max(-b, Fraction(0)), -a))
    raise CondcheckError(f"unknown kind {kind!r} in a refutation")


def _condition1_refutation(c: _Ctx, v) -> list[str]:
    """A symbolic "fails" of Condition 1, re-proved: a point counterexample of clause (a), or the
    refutation cover of an existence clause (every value of the format excluded)."""
    fmt = c.fmt
    cx = v.get("counterexample") or {}
    clause = (v.get("failing_clause") or "")[:3]
    om = Fraction(fmt.max)
    if clause == "(a)":
        z = c.num(cx, "z")
        L = c.val(-om)
        dead = L is not None and c.val(z) == L and c.der(z) == 0
        if dead or z > -om / 2:
            return [f"(a) the counterexample z = {float(z)!r} is dead or above -Omega/2"]
        return []
    expected = {"(b)": ("sigma", "finite_not_L"), "(c)": ("sigma", "positive_pow2"), "(d)": ("sigma", "zero"),
                "(e)": ("derivative", "nonzero_pow2")}.get(clause)
    if expected is None:
        return [f"unknown failing clause {v.get('failing_clause')!r}"]
    return _refutation_cover(c, cx.get("refutation"), clause, *expected)


def _condition2_refutation(c: _Ctx, v) -> list[str]:
    """Condition 2 fails when no value is a pass state: sigma~' = +-2^k with 2^-M <= 2^k <= 1 nowhere
    (clause (ii)), or nowhere with also -k <= e_max and k <= -e_min + M (clause (iii)); or when no *pair*
    satisfies clauses (i)..(s) (s = (ii), (iii), (iv): a pair refutation cover, see :func:`_pair_cover`)
    while a given pair satisfies the clauses before (s)."""
    cx = v.get("counterexample") or {}
    ref = cx.get("refutation")
    clause = v.get("failing_clause") or ""
    if isinstance(ref, dict) and ref.get("kind") == "pairs":
        stage = {"(iv) no pair satisfying (i)-(iii)": 4, "(iii) for every pass candidate": 3,
                 "(ii) no delta_0 with 2^eta_0": 2}
        s = next((n for head, n in stage.items() if clause.startswith(head)), None)
        if s is None:
            return [f"a pair refutation of Condition 2 is re-checked for clauses (ii)-(iv) only, not {clause!r}"]
        if ref.get("stage") != s or ref.get("clause") != ("(ii)", "(iii)", "(iv)")[s - 2]:
            return [f"the pair refutation is about stage {ref.get('stage')!r} / {ref.get('clause')!r}, "
                    f"not the failing clause {clause[:5]!r}"]
        before = {4: "(i)-(iii)", 3: "(i)-(ii)", 2: "(i)"}[s]
        pair = cx.get(f"pair_for_{before}")
        if not isinstance(pair, dict):
            return [f"a pair refutation of {clause[:5]} needs a pair satisfying {before} (pair_for_{before})"]
        got = _c2_stages(c, c.num(pair, "delta_0"), c.num(pair, "delta_1"))
        if got < s - 1:
            return [f"the pair given for {before} satisfies only the first {got} clause(s)"]
        if s == 2:
            return ["a pair refutation of (ii) is worded 'no delta_0' only when a pass state exists; "
                    "the certificate does not show one"] if not _c2_has_pass(c, cx) else _pair_cover(c, ref, s)
        return _pair_cover(c, ref, s)
    if clause.startswith("(ii) no delta_1"):
        return _refutation_cover(c, ref, "(ii)", "derivative", "pass_pow2")
    if clause.startswith("(iii) for every pass candidate"):
        return _refutation_cover(c, ref, "(iii)", "derivative", "pass_pow2_iii")
    return [f"a symbolic refutation of Condition 2 is re-checked for clauses (ii) and (iii) (no delta_1) and "
            f"for pair refutations only, not {clause!r}"]


def _c2_stages(c: _Ctx, d0: Fraction, d1: Fraction) -> int:
    """How many of Condition 2's clauses (i), (ii), (iii), (iv), in order, hold at (delta_0, delta_1)
    (with the weakest eta_1 = -k, eta_2 = k)."""
    fmt = c.fmt
    s0, s1, g0, g1 = c.val(d0), c.val(d1), c.der(d0), c.der(d1)
    if None in (s0, s1, g0, g1) or s0 == s1 or max(abs(s0), abs(s1), abs(s0 - s1)) > c.T:
        return 0
    if not (_pow2(g1) and Fraction(1, 2 ** fmt.M) <= abs(g1) <= 1):
        return 1
    k = abs(g1).numerator.bit_length() - abs(g1).denominator.bit_length()     # |g1| = 2^k
    if not 2 * abs(g0) <= abs(g1):                                              # eta_0 >= 1
        return 1
    if not (-k <= fmt.e_max and k <= -fmt.e_min + fmt.M):
        return 2
    if not Fraction(2) ** (fmt.e_min + k) <= max(abs(s0), abs(s1)) <= Fraction(2) ** (fmt.e_max + k):
        return 3
    return 4


def _c2_has_pass(c: _Ctx, cx) -> bool:
    """Does the certificate name a value with sigma~' = +-2^k, 2^-M <= 2^k <= 1, sigma~ finite and at
    most 2^e_max (a pass state of (ii) on its own)?"""
    q = cx.get("pass_state")
    if not isinstance(q, dict):
        return False
    z = c.num({"z": q}, "z")
    s, g = c.val(z), c.der(z)
    return s is not None and g is not None and abs(s) <= c.T and _pow2(g) and Fraction(1, 2 ** c.fmt.M) <= abs(g) <= 1


def _pair_ranges(c: _Ctx, how: str, a: Fraction, b: Fraction, slopes, prec):
    """The ranges of sigma~ and sigma~' over the values of [a, b]: at a single value by certain rounding
    (``p``), else between RN_F of the ends of the interval enclosure (``e``), intersected (``m``) for each
    function with the range between its certain roundings at a and b when its derivative's enclosure
    over [a, b] is finite and of one sign."""
    import mpmath.libmp as M

    from conditions._tail import enclose_interval
    from .rounded_activation import _round_end, exact_point
    act, fmt = c.r.activation, c.fmt
    out = []
    for deriv, g in ((False, act.expr), (True, act.derivative)):
        if how == "p":
            q = exact_point(act, deriv, a, fmt)
            out.append((q, q))
            continue
        lo, hi = enclose_interval(g, a, b, prec)
        try:
            r = (_round_end(lo, fmt), _round_end(hi, fmt))
        except CondcheckError:
            r = (float("-inf"), float("inf"))
        if how == "m":
            for d in slopes[deriv]:
                dlo, dhi = enclose_interval(d, a, b, prec)
                if all(t not in (M.finf, M.fninf, M.fnan) for t in (dlo, dhi)) and (
                        M.mpf_ge(dlo, M.fzero) or M.mpf_le(dhi, M.fzero)):
                    qa, qb = exact_point(act, deriv, a, fmt), exact_point(act, deriv, b, fmt)
                    r = (max(r[0], min(qa, qb)), min(r[1], max(qa, qb)))
                    break
        out.append(r)
    return out


def _pair_cover(c: _Ctx, ref, stage: int) -> list[str]:
    """A pair refutation of Condition 2's clauses (i)..(stage), re-proved from its cover.

    The cover's intervals must follow each other value by value from -Omega to Omega.  For each, the
    ranges of sigma~ and sigma~' over its values are computed again (:func:`_pair_ranges`).  Then for every
    exponent k a pass state +-2^k may have at this stage, no interval whose sigma~' range contains +-2^k
    (a possible delta_1) may be *compatible* with an interval whose sigma~' range meets
    [-2^(k-1), 2^(k-1)] (a possible delta_0, eta_0 >= 1): some reals s_1, s_0 in their sigma~ ranges clipped
    to [-2^e_max, 2^e_max] with s_0 != s_1, |s_0 - s_1| <= 2^e_max and, at stage (iv),
    2^(e_min+k) <= max(|s_0|, |s_1|) <= 2^(e_max+k).  The values of F are among those reals, so no pair of
    F x F satisfies the clauses."""
    import sympy

    from .activations import x as X
    fmt, act = c.fmt, c.r.activation
    if act.expr is None or c.r.implementation != "exact":
        return ["a pair refutation is re-checked for the correctly rounded implementation of an expression only"]
    slopes = {}
    for deriv, g in ((False, act.expr), (True, act.derivative)):
        slopes[deriv] = []
        if _smooth(g):
            d = sympy.diff(g, X)
            slopes[deriv].append(d)
            try:
                f = sympy.factor(d)
                if _smooth(f):
                    slopes[deriv].append(f)
            except Exception:
                pass
    prec = max(64, 2 * (fmt.M + 1) + 24)
    om = Fraction(fmt.max)
    items = re.findall(r"([epm])\[\s*([^,\]\s]+)\s*,\s*([^\]\s]+)\s*\]", ref.get("cover") or "")
    if not items:
        return ["the pair refutation cover has no intervals"]
    ranges, expect = [], -om
    for how, ta, tb in items:
        a, b = _hex_value(ta), _hex_value(tb)
        if a != expect or b < a or not fmt.contains(a) or not fmt.contains(b) or (how == "p") != (a == b):
            return [f"pair cover interval {how}[{float(a)!r}, {float(b)!r}] does not continue the cover "
                    f"(expected it to start at {float(expect)!r})"]
        ranges.append(_pair_ranges(c, how, a, b, slopes, prec))
        if b == om:
            break
        expect = fmt.next_up(b)
    else:
        return ["the pair refutation cover ends before Omega"]
    if len(ranges) != len(items):
        return ["the pair refutation cover goes on after Omega"]
    T = c.T
    ks = range(-fmt.M, 1)
    if stage >= 3:
        ks = [k for k in ks if -k <= fmt.e_max and k <= -fmt.e_min + fmt.M]
    for k in ks:
        p, h = Fraction(2) ** k, Fraction(2) ** (k - 1)
        lo = Fraction(2) ** (fmt.e_min + k) if stage >= 4 else Fraction(0)
        hi = min(T, Fraction(2) ** (fmt.e_max + k)) if stage >= 4 else T
        P, B = [], []
        for (s, d) in ranges:
            sl, sh = max(s[0], -hi), min(s[1], hi)
            dl, dh = max(d[0], -om), min(d[1], om)
            if sl > sh or dl > dh:
                continue
            if dl <= p <= dh or dl <= -p <= dh:
                P.append((Fraction(sl), Fraction(sh)))
            if dl <= h and dh >= -h:
                B.append((Fraction(sl), Fraction(sh)))
        for r1 in set(P):
            for r0 in set(B):
                if _c2_compatible(r0, r1, T, lo, hi):
                    return [f"the pair cover does not exclude k = {k}: a possible delta_1 with sigma~ in "
                            f"[{float(r1[0])!r}, {float(r1[1])!r}] and a possible delta_0 with sigma~ in "
                            f"[{float(r0[0])!r}, {float(r0[1])!r}] are compatible"]
    return []


def _c2_compatible(r0, r1, T, lo, hi) -> bool:
    """Reals s_0 in r0, s_1 in r1 (both within [-hi, hi]) with s_0 != s_1, |s_0 - s_1| <= T and
    max(|s_0|, |s_1|) >= lo?  (Either s_0 or s_1 has |s| >= lo.)"""
    def pieces(r):          # the parts of r with |s| >= lo
        out = []
        for a, b in ((max(r[0], lo), r[1]), (r[0], min(r[1], -lo))):
            if a <= b:
                out.append((a, b))
        return out

    def close(u, v):        # s in u, t in v, s != t, |s - t| <= T
        return max(u[0] - v[1], v[0] - u[1]) <= T and not (u[0] == u[1] == v[0] == v[1])
    return any(close(u, r1) for u in pieces(r0)) or any(close(r0, v) for v in pieces(r1))


def _condition3_refutation(c: _Ctx, v) -> list[str]:
    """Condition 3 fails when |sigma~'(0)| < 2^-M (route (a), at the point 0) and |sigma~'| < 2^-M at every
    value (route (b), from the refutation cover)."""
    d0 = c.der(Fraction(0))
    if d0 is not None and abs(d0) >= Fraction(1, 2 ** c.fmt.M):
        return ["(a) |sigma~'(0)| >= 2^-M: route (a) does not fail at 0"]
    return _refutation_cover(c, (v.get("counterexample") or {}).get("refutation"), "(b)", "derivative",
                             "abs_at_least_2^-M")


def _refutation_cover(c: _Ctx, ref, clause: str, function: str, kind: str) -> list[str]:
    """The cover must exclude ``kind`` from RN_F(g) (g = sigma or sigma') at every value from -Omega to
    Omega, interval by interval (see the module docstring)."""
    import mpmath.libmp as M
    import sympy

    from conditions._tail import enclose_interval
    from .activations import x as X
    from .rounded_activation import _round_end
    fmt, act = c.fmt, c.r.activation
    om = Fraction(fmt.max)
    if not isinstance(ref, dict) or ref.get("clause") != clause:
        return [f"{clause} a symbolic refutation needs a refutation cover for that clause"]
    if (ref.get("function"), ref.get("kind")) != (function, kind):
        return [f"{clause} the refutation is about {ref.get('function')}/{ref.get('kind')}, not {function}/{kind}"]
    if act.expr is None or c.r.implementation != "exact":
        return [f"{clause} a refutation is re-checked for the correctly rounded implementation of an expression only"]
    L = c.val(-om)
    if kind == "finite_not_L":
        if L is None or c.num(ref, "L") != L:
            return [f"{clause} the refutation's L is not sigma~(-Omega)"]
    g = act.expr if function == "sigma" else act.derivative
    point = c.val if function == "sigma" else c.der
    slope = []
    if _smooth(g):                              # g' as differentiated, and its factored form
        slope.append(sympy.diff(g, X))
        try:
            f = sympy.factor(slope[0])
            if _smooth(f):
                slope.append(f)
        except Exception:
            pass
    prec = max(64, 2 * (fmt.M + 1) + 24)
    items = re.findall(r"([epm])\[\s*([^,\]\s]+)\s*,\s*([^\]\s]+)\s*\]", ref.get("cover") or "")
    if not items:
        return [f"{clause} the refutation cover has no intervals"]
    expect = -om
    for how, ta, tb in items:
        a, b = _hex_value(ta), _hex_value(tb)
        if a != expect or b < a or not fmt.contains(a) or not fmt.contains(b):
            return [f"{clause} cover interval [{float(a)!r}, {float(b)!r}] does not continue the cover "
                    f"(expected it to start at {float(expect)!r})"]
        if how == "p":
            if a != b:
                return [f"{clause} a single-value entry [{float(a)!r}, {float(b)!r}] has two ends"]
            q = point(a)
            if q is not None and _kind_in(fmt, kind, q, q, L):
                return [f"{clause} holds at z = {float(a)!r}: the refutation is wrong"]
        elif how == "e":
            lo, hi = enclose_interval(g, a, b, prec)
            try:
                rl, rh = _round_end(lo, fmt), _round_end(hi, fmt)
            except CondcheckError:
                return [f"{clause} no enclosure over [{float(a)!r}, {float(b)!r}]"]
            if _kind_in(fmt, kind, rl, rh, L):
                return [f"{clause} the enclosure over [{float(a)!r}, {float(b)!r}] does not exclude {kind}"]
        else:                                   # "m": monotone (smooth g, derivative of one sign)
            if not slope:
                return [f"{clause} a monotonicity interval needs a smooth expression"]
            signed = False
            for d in slope:
                dlo, dhi = enclose_interval(d, a, b, prec)
                if all(t not in (M.finf, M.fninf, M.fnan) for t in (dlo, dhi)) and (
                        M.mpf_ge(dlo, M.fzero) or M.mpf_le(dhi, M.fzero)):
                    signed = True
                    break
            if not signed:
                return [f"{clause} the derivative's sign over [{float(a)!r}, {float(b)!r}] is not proved"]
            qa, qb = point(a), point(b)
            if qa is None or qb is None or _kind_in(fmt, kind, min(qa, qb), max(qa, qb), L):
                return [f"{clause} the rounded ends over [{float(a)!r}, {float(b)!r}] do not exclude {kind}"]
        if b == om:
            return []
        expect = fmt.next_up(b)
    return [f"{clause} the refutation cover ends before Omega"]


def _condition2(c: _Ctx, w) -> list[str]:
    bad = []
    fmt = c.fmt
    d0, d1 = c.num(w, "delta_0"), c.num(w, "delta_1")
    s0, s1, g0, g1 = c.val(d0), c.val(d1), c.der(d0), c.der(d1)
    if None in (s0, s1, g0, g1):
        return ["sigma~ or sigma~' overflows at delta_0 or delta_1"]
    if not (s0 != s1 and abs(s0) <= c.T and abs(s1) <= c.T and abs(s0 - s1) <= c.T):
        bad.append("(i)")
    k = w.get("k")
    if not (isinstance(k, int) and _pow2(g1) and abs(g1) == Fraction(2) ** k and Fraction(2) ** -fmt.M <= abs(g1) <= 1):
        bad.append("(ii) sigma~'(delta_1) = +-2^k with 2^-M <= 2^k <= 1")
    if w.get("eta_0_unbounded"):
        if g0 != 0:
            bad.append("(ii) an unbounded eta_0 needs sigma~'(delta_0) = 0")
    else:
        e0 = w.get("eta_0")
        if not (isinstance(e0, int) and e0 >= 1 and Fraction(2) ** e0 * abs(g0) <= abs(g1)):
            bad.append("(ii) eta_0")
    e1, e2 = w.get("eta_1"), w.get("eta_2")
    if not (isinstance(e1, int) and isinstance(e2, int) and isinstance(k, int)
            and -k <= e1 <= fmt.e_max and k <= e2 <= -fmt.e_min + fmt.M):
        return bad + ["(iii)"]
    m = max(abs(s0), abs(s1))
    if not (Fraction(2) ** (fmt.e_min + e2) <= m <= Fraction(2) ** (fmt.e_max - e1)):
        bad.append("(iv)")
    return bad


def _bounded(c: _Ctx, t) -> bool:
    v = c.val(t)
    return v is not None and abs(v) <= c.T


def _even_last_bit(fmt, q: Fraction) -> bool:
    a = abs(q)
    e = fmt.e_min
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    m = a / Fraction(2) ** (e - fmt.M)
    return m.denominator == 1 and m.numerator % 2 == 0


def _condition3(c: _Ctx, w) -> list[str]:
    fmt = c.fmt
    z = c.num(w, "zeta")
    if z <= 0:
        return ["zeta > 0"]
    if w.get("route") == "a":
        d = c.der(Fraction(0))
        if d is None or abs(d) < Fraction(2) ** -fmt.M:
            return ["(a) |sigma~'(0)| >= 2^-M"]
        pts = (-z, Fraction(0), z)
    elif w.get("route") == "b":
        x = c.num(w, "x")
        if abs(x) < z or not _even_last_bit(fmt, x):
            return ["(b) |x| >= zeta and x even"]
        try:
            s = round_fraction(z + abs(x), fmt)
        except FormatOverflowError:
            return ["(b) RN(zeta + |x|) overflows"]
        d = c.der(x)
        if d is None or abs(d) < Fraction(2) ** -fmt.M or c.val(x) is None:
            return ["(b) |sigma~'(x)| >= 2^-M"]
        pts = (-s, Fraction(0), s)
    else:
        return [f"unknown route {w.get('route')!r}"]
    return [] if all(_bounded(c, t) for t in pts) else ["sigma~ finite and <= 2^e_max at -s, 0, s"]


_RECHECK = {"1": _condition1, "2": _condition2, "3": _condition3}
_REFUTATION = {"1": _condition1_refutation, "2": _condition2_refutation, "3": _condition3_refutation}


def recheck_certificate(cert: dict) -> dict:
    """{"ok": bool, "conditions": {k: {"verdict", "rechecked", "problems"}}} for a condcheck.check/1 certificate."""
    if cert.get("schema") != "condcheck.check/1":
        raise CondcheckError(f"not a condition certificate (schema {cert.get('schema')!r}, expected 'condcheck.check/1')")
    c = _Ctx(cert)
    out, ok = {}, True
    for k in ("1", "2", "3"):
        v = cert.get("conditions", {}).get(k)
        if v is None:
            raise CondcheckError(f"certificate has no verdict for Condition {k}")
        if v.get("holds") is True:
            problems = _RECHECK[k](c, v.get("witness") or {})
            out[k] = {"verdict": "holds", "rechecked": True, "problems": problems}
            ok &= not problems
        elif v.get("holds") is False and v.get("method") == "symbolic":
            problems = _REFUTATION[k](c, v)
            out[k] = {"verdict": "fails", "rechecked": True, "problems": problems}
            ok &= not problems
        else:
            out[k] = {"verdict": {False: "fails", None: "undecided"}[v.get("holds")], "rechecked": False,
                      "problems": []}
    return {"ok": ok, "activation": cert.get("activation"), "format": c.fmt.name, "conditions": out}


def recheck_file(path) -> dict:
    try:
        with open(path) as fh:
            cert = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise CondcheckError(f"cannot read certificate {path!r}: {e}") from None
    return recheck_certificate(cert)
