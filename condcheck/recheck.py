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
fields disagree with each other is rejected.  A "fails" verdict is a statement about every value of the
format and cannot be re-checked from a witness; it is reported as not re-checked.  Undecided verdicts
have nothing to check.
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
