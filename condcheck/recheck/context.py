"""What every re-check shares: the first false statement as an exception, reading exact values, and
sigma~ / sigma~' by the certain evaluation (``condcheck.rounded_activation``, shared with the checkers)."""
from __future__ import annotations

from fractions import Fraction

from ..errors import CondcheckError, FormatOverflowError
from ..hexfloat import HexFloatError, parse_exact
from .schema import FRACTION_TEXT, PAIR_FIELDS


class Rejected(CondcheckError):
    """A statement of the certificate that is false, malformed, or that recheck cannot re-prove."""

    def __init__(self, statement: str, problem: str):
        super().__init__(f"{statement}: {problem}")
        self.statement, self.problem = statement, problem


def is_pow2(q) -> bool:
    """|q| = 2^k for an integer k (q != 0)."""
    a = abs(Fraction(q))
    return a > 0 and a.numerator & (a.numerator - 1) == 0 and a.denominator & (a.denominator - 1) == 0


def log2_exact(q) -> int:
    """k with |q| = 2^k (q a power of two)."""
    a = abs(Fraction(q))
    return a.numerator.bit_length() - a.denominator.bit_length()


def even_last_bit(fmt, q: Fraction) -> bool:
    """Is the last bit of the significand of the value q of fmt zero (0 counts as even)?"""
    a = abs(Fraction(q))
    e = fmt.e_min
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    m = a / Fraction(2) ** (e - fmt.M)
    return m.denominator == 1 and m.numerator % 2 == 0


def text(q) -> str:
    """A value for messages: its hexadecimal form (exact, never a float repr)."""
    q = Fraction(q)
    try:
        f = float(q)
        if Fraction(f) == q:
            return f.hex()
    except OverflowError:
        pass
    n, e = abs(q.numerator), -(q.denominator.bit_length() - 1)
    return f"{'-' if q < 0 else ''}0x{n:x}p{e:+d}"


def exact_text(text, path: str) -> Fraction:
    """The value of a hexadecimal text (:mod:`condcheck.hexfloat`), or a rejection naming ``path``."""
    try:
        return parse_exact(text, "hex")
    except HexFloatError as e:
        raise Rejected(path, str(e).removeprefix("hex: ")) from None


def fields(obj, spec, path: str) -> dict:
    """``obj`` must be a JSON object with exactly the fields of ``spec`` (names; a dict maps each name to
    its kind, checked here for the plain kinds "int", "bool", "int|null", "text", "null")."""
    names = tuple(spec)
    if not isinstance(obj, dict):
        raise Rejected(path, f"must be an object with the fields {', '.join(names)}")
    for k in obj:
        if k not in names:
            raise Rejected(f"{path}.{k}", "unknown field: recheck cannot re-prove it, and a certificate states "
                                          "nothing unchecked")
    for k in names:
        if k not in obj:
            raise Rejected(f"{path}.{k}", "missing")
    if isinstance(spec, dict):
        for k, kind in spec.items():
            v = obj[k]
            ok = {"int": lambda: type(v) is int, "bool": lambda: type(v) is bool,
                  "int|null": lambda: v is None or type(v) is int, "text": lambda: isinstance(v, str),
                  "null": lambda: v is None}.get(kind, lambda: True)()
            if not ok:
                raise Rejected(f"{path}.{k}", f"must be {kind.replace('|', ' or ')}, not {type(v).__name__}")
    return obj


class Context:
    """The format and the rounded activation a certificate is about, and its statements re-proved so far."""

    def __init__(self, fmt, rounded):
        self.fmt, self.rounded = fmt, rounded
        self.T = Fraction(2) ** fmt.e_max           # 2^e_max
        self.omega = Fraction(fmt.max)               # Omega
        self.proved = 0
        self.pending = []                            # (statement, why it was not re-derived): see recheck.wide
        self._memo = {}

    # -- exact values -------------------------------------------------------------------------------
    def value(self, obj, path: str) -> Fraction:
        """The value of an exact value record {"hex", "fraction", "bits"}: the three must agree and
        denote a finite value of the format."""
        if not isinstance(obj, dict) or set(obj) != {"hex", "fraction", "bits"}:
            raise Rejected(path, 'not an exact value {"hex", "fraction", "bits"}')
        q = exact_text(obj["hex"], f"{path}.hex")
        fr = obj["fraction"]
        if not isinstance(fr, str) or FRACTION_TEXT.match(fr) is None or len(fr) > 4000:
            raise Rejected(f"{path}.fraction", f"{fr!r} is not a fraction n or n/d in lowest terms")
        if Fraction(fr) != q or str(Fraction(fr)) != fr:
            raise Rejected(f"{path}.fraction", f"{fr} is not the value of hex {obj['hex']} in lowest terms")
        if not self.fmt.contains(q):
            raise Rejected(path, f"{obj['hex']} is not a finite value of {self.fmt.name}")
        if obj["bits"] != self.fmt.bits_text(q):
            raise Rejected(f"{path}.bits", f"{obj['bits']!r} does not encode {obj['hex']} in {self.fmt.name} "
                                           f"(its bits are {self.fmt.bits_text(q)})")
        return q

    def value_or_null(self, obj, path: str):
        return None if obj is None else self.value(obj, path)

    # -- sigma~ and sigma~' ---------------------------------------------------------------------------
    def sigma(self, q: Fraction):
        """sigma~(q) exactly, or None when it overflows."""
        return self._eval(q, False)

    def dsigma(self, q: Fraction):
        """sigma~'(q) exactly, or None when it overflows."""
        return self._eval(q, True)

    def _eval(self, q, derivative):
        key = (Fraction(q), derivative)
        if key not in self._memo:
            fn = self.rounded.derivative if derivative else self.rounded.value
            try:
                self._memo[key] = fn(key[0])
            except FormatOverflowError:
                self._memo[key] = None
        return self._memo[key]

    # -- statements ------------------------------------------------------------------------------------
    def claim(self, ok: bool, path: str, problem: str) -> None:
        """One statement: re-proved (counted), or the certificate is rejected here."""
        if not ok:
            raise Rejected(path, problem)
        self.proved += 1

    def computed(self, obj, path: str, actual, what: str) -> None:
        """A value the certificate reports (or null for an overflow), compared with the recomputed one."""
        got = self.value_or_null(obj, path)
        if got != actual:
            shown = "an overflow" if actual is None else text(actual)
            said = "an overflow (null)" if got is None else text(got)
            raise Rejected(path, f"the certificate says {said}, but {what} is {shown}")
        self.proved += 1

    def pair(self, obj, path: str):
        """A pair record of Condition 2: (delta_0, delta_1, sigma~ at both, sigma~' at both), every value
        recomputed and compared."""
        if not isinstance(obj, dict) or set(obj) != set(PAIR_FIELDS):
            raise Rejected(path, f"a pair has exactly the fields {', '.join(PAIR_FIELDS)}")
        d0, d1 = self.value(obj["delta_0"], f"{path}.delta_0"), self.value(obj["delta_1"], f"{path}.delta_1")
        for name, q, fn, what in (("sigma(delta_0)", d0, self.sigma, "sigma~(delta_0)"),
                                  ("sigma(delta_1)", d1, self.sigma, "sigma~(delta_1)"),
                                  ("dsigma(delta_0)", d0, self.dsigma, "sigma~'(delta_0)"),
                                  ("dsigma(delta_1)", d1, self.dsigma, "sigma~'(delta_1)")):
            self.computed(obj[name], f"{path}.{name}", fn(q), what)
        return d0, d1
