"""Floating-point formats as data (docs/semantics.md).

A :class:`Format` is a finite set of binary floating-point values: every value is
``s * m * 2**(e - M)`` with an integer significand ``0 <= m < 2**(M+1)`` and ``e >= e_min``, and
``|value| <= Omega``.  That one grid describes every format condcheck supports: IEEE binary formats,
custom IEEE-like ``bM_E`` formats, and the non-IEEE ml_dtypes formats (``fn``: no infinity,
``fnuz``: one zero and NaN at the ``-0`` pattern, other biases).

For ml_dtypes formats (and float16) the fields are *read off the real encodings*: every bit pattern
decoded by ml_dtypes gives the value set, checked against the grid above (:func:`derive_from_encodings`).
They are kept in :data:`ENCODED_FIELDS` so that a process that only needs the values does not import
ml_dtypes (most of a CLI call's start-up); tests/test_formats.py derives them again from the encodings
and compares.  Bit patterns follow one rule for every format: sign bit, then the magnitude's index
among the non-negative values (IEEE, ``fn`` and ``fnuz`` encodings alike; the same tests compare every
pattern with ml_dtypes' decoding).  float32 and float64 are IEEE binary32/binary64, whose fields follow
from (M, E); ``bM_E`` formats are defined here, with IEEE encodings.

Values are exact :class:`fractions.Fraction` objects in the reference path, and float64 numbers in
the fast path (every value of a format whose range fits float64 is a float64 exactly).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
import functools
from functools import lru_cache

import numpy as np

from .errors import CondcheckError, NotInFormatError, UnknownNameError

# Formats that ml_dtypes provides and that have a zero (float8_e8m0fnu has none and is refused).
ML_DTYPES_FORMATS = (
    "bfloat16", "float8_e5m2", "float8_e4m3", "float8_e4m3fn", "float8_e3m4", "float8_e5m2fnuz",
    "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn",
)
NUMPY_FORMATS = ("float16", "float32", "float64")
REFUSED_FORMATS = {"float8_e8m0fnu": "it has no zero (every value is a power of two), so affine maps "
                                     "and AD can not be expressed in it"}
_CUSTOM = re.compile(r"^b([0-9]+)_([0-9]+)$")
#: the widest exponent field of a custom format (binary128 has 15; 2^(2^23) is already a megabyte)
MAX_CUSTOM_E = 24
# Largest formats enumerated as whole arrays.
MAX_ENUMERATION_BITS = 24


@dataclass(frozen=True)
class Format:
    """A binary floating-point format.  Fields follow numpy/ml_dtypes ``finfo`` names where they exist.

    ``M``: stored fraction bits; ``E``: exponent bits; ``p = M + 1`` significand precision;
    ``e_min``: exponent of the smallest normal; ``e_max``: exponent of the largest finite value.
    """

    name: str
    bits: int
    M: int
    E: int
    e_min: int
    e_max: int
    max: Fraction                 # Omega, the largest finite value
    has_inf: bool
    has_nan: bool
    has_neg_zero: bool
    ieee: bool                    # IEEE-style encoding: bias 2**(E-1)-1, inf/NaN at the top exponent
    dtype_name: str | None = field(default=None, compare=False)   # numpy or ml_dtypes name of its dtype

    @functools.cached_property
    def dtype(self) -> np.dtype | None:
        """The format's own numpy dtype (ml_dtypes is imported here, on first use), or None (``bM_E``)."""
        if self.dtype_name is None:
            return None
        if self.dtype_name in NUMPY_FORMATS:
            return np.dtype(self.dtype_name)
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, self.dtype_name))

    # ---- derived fields -------------------------------------------------------------------------
    @property
    def p(self) -> int:
        return self.M + 1

    @functools.cached_property
    def max_float(self) -> float:
        """Omega as a float64 (inf when Omega is beyond float64); for fast comparisons."""
        return float(self.max) if self.max <= Fraction(float(np.finfo(np.float64).max)) else math.inf

    @property
    def Omega(self) -> Fraction:
        return self.max

    @property
    def smallest_normal(self) -> Fraction:
        return Fraction(2) ** self.e_min

    @property
    def smallest_subnormal(self) -> Fraction:
        """omega: the smallest positive value."""
        return Fraction(2) ** (self.e_min - self.M)

    @property
    def eps(self) -> Fraction:
        """Distance from 1 to the next larger value."""
        return Fraction(2) ** (-self.M)

    @property
    def fits_float64(self) -> bool:
        """Every value, and every exact product/sum of two values, rounds correctly via float64.

        Products of two p-bit numbers are exact in float64 when 2p <= 53 and sums are rounded
        innocuously twice when 53 >= 2p + 1; the exponent range must sit inside float64's normal range
        so that those float64 results are neither subnormal nor overflowed.
        """
        if self.name == "float64":
            return True
        return 2 * self.p + 1 <= 53 and 2 * (self.e_min - self.M) >= -1022 and 2 * (self.e_max + 1) <= 1023

    @property
    def enumerable(self) -> bool:
        return self.bits <= MAX_ENUMERATION_BITS

    def ulp_exponent(self, e: int) -> int:
        """Exponent of the spacing of values in binade e (subnormals share e_min's)."""
        return max(e, self.e_min) - self.M

    # ---- membership and conversion --------------------------------------------------------------
    def contains(self, value) -> bool:
        """Is ``value`` (a number) exactly a finite value of this format?"""
        try:
            q = to_fraction(value)
        except (ValueError, OverflowError, TypeError):
            return False
        if q == 0:
            return True
        a = abs(q)
        if a > self.max:
            return False
        e = floor_log2(a)
        s = self.ulp_exponent(e)
        scaled = a / Fraction(2) ** s
        return scaled.denominator == 1

    def check(self, value, what: str = "value") -> Fraction:
        """Return ``value`` as an exact Fraction, or raise a clear error naming it."""
        try:
            q = to_fraction(value)
        except (ValueError, OverflowError, TypeError):
            raise NotInFormatError(f"{what} {_value_text(value)} is not a finite number; {self.name} holds finite "
                                   f"values in [-{num_text(self.max)}, {num_text(self.max)}]") from None
        if not self.contains(q):
            raise NotInFormatError(
                f"{what} {_value_text(value)} is not a value of {self.name} (nearest values: "
                f"{_nearest_text(self, q)}); {self.name} has {self.M} fraction bits, "
                f"exponents {self.e_min}..{self.e_max}, largest finite {num_text(self.max)}")
        return q

    def decompose(self, value) -> tuple[int, int, int]:
        """(sign, m, e) with value = sign * m * 2**(e - M), 0 <= m < 2**(M+1), e >= e_min.

        ``m`` is the integer significand including the implicit bit; zero gives (1, 0, e_min).
        """
        q = self.check(value)
        sign = -1 if q < 0 else 1
        if q == 0:
            return 1, 0, self.e_min
        a = abs(q)
        e = max(floor_log2(a), self.e_min)
        m = a / Fraction(2) ** (e - self.M)
        return sign, int(m), e

    def has_even_significand(self, value) -> bool:
        """Is the last significand bit of ``value`` zero (the "even" values of ties-to-even)?"""
        return self.decompose(value)[1] % 2 == 0

    def next_up(self, value) -> Fraction:
        """The smallest value greater than ``value``; error at the largest finite value."""
        q = self.check(value)
        if q < 0:
            return -self.next_down(-q)
        if q >= self.max:
            raise NotInFormatError(f"{num_text(q)} is the largest finite value of {self.name}; it has no successor")
        e = floor_log2(q) if q > 0 else self.e_min
        return q + Fraction(2) ** self.ulp_exponent(e)

    def next_down(self, value) -> Fraction:
        """The largest value smaller than ``value``."""
        q = self.check(value)
        if q <= 0:
            return -self.next_up(-q)
        e = floor_log2(q)
        step_e = e - 1 if (q == Fraction(2) ** e and e > self.e_min) else e
        return q - Fraction(2) ** self.ulp_exponent(step_e)

    # ---- enumeration ----------------------------------------------------------------------------
    def count_finite(self) -> int:
        """Number of distinct finite values (one zero)."""
        positive = 0
        top_m = int(self.max / Fraction(2) ** (self.e_max - self.M))
        positive += 2 ** self.M - 1                                   # subnormals
        positive += (self.e_max - self.e_min) * 2 ** self.M           # full binades
        positive += top_m - 2 ** self.M + 1                           # top binade
        return 2 * positive + 1

    def values(self) -> np.ndarray:
        """All distinct finite values, ascending, as float64 (exact), one zero."""
        return _values_float64(self)

    def values_dtype(self) -> np.ndarray:
        """All distinct finite values in the format's own numpy dtype (float64 for custom formats)."""
        vals = self.values()
        return vals.astype(self.dtype) if self.dtype is not None else vals

    def fractions(self) -> list[Fraction]:
        """All distinct finite values, ascending, as exact rationals."""
        return [Fraction(float(v)) for v in self.values()] if self.fits_float64 else _values_fraction(self)

    # ---- bit patterns ---------------------------------------------------------------------------
    def to_bits(self, value, negative_zero: bool = False) -> int:
        """The bit pattern encoding ``value`` (``negative_zero`` picks -0 where the format has one)."""
        q = self.check(value)
        sign, m, e = self.decompose(q)
        s = 1 if (sign < 0 or (q == 0 and negative_zero and self.has_neg_zero)) else 0
        if m < 2 ** self.M:                     # zero or subnormal
            biased, frac = 0, m
        else:
            biased, frac = e - self.e_min + 1, m - 2 ** self.M
        return (s << (self.bits - 1)) | (biased << self.M) | frac

    def from_bits(self, pattern: int) -> Fraction:
        """The finite value of a bit pattern; error for patterns of Inf, NaN or out of range."""
        if not 0 <= int(pattern) < 2 ** self.bits:
            raise NotInFormatError(f"bit pattern {pattern} is out of range for the {self.bits}-bit format {self.name}")
        pattern = int(pattern)
        s = pattern >> (self.bits - 1)
        magnitude = pattern & ((1 << (self.bits - 1)) - 1)
        biased = magnitude >> self.M
        frac = pattern & ((1 << self.M) - 1)
        if magnitude > self._top_magnitude or (s and magnitude == 0 and not self.has_neg_zero):
            what = "Inf" if self.has_inf and magnitude == self._top_magnitude + 1 else "NaN"
            raise NotInFormatError(f"bit pattern {pattern:#x} of {self.name} encodes {what}, not a finite value")
        if biased == 0:
            v = Fraction(frac) * Fraction(2) ** (self.e_min - self.M)
        else:
            v = Fraction(frac + 2 ** self.M) * Fraction(2) ** (biased - 1 + self.e_min - self.M)
        return -v if s else v

    @functools.cached_property
    def _top_magnitude(self) -> int:
        """The magnitude bits of Omega (patterns above it are Inf or NaN)."""
        return self.to_bits(self.max)

    def bits_text(self, value, negative_zero: bool = False) -> str:
        """The bit pattern as a binary string of ``bits`` digits."""
        return format(self.to_bits(value, negative_zero), f"0{self.bits}b")

    def describe(self) -> dict:
        """The fields as plain data (for tables and JSON)."""
        return {
            "name": self.name, "bits": self.bits, "M": self.M, "E": self.E, "e_min": self.e_min,
            "e_max": self.e_max, "max": float(self.max) if self.fits_float64 else str(self.max),
            "smallest_normal": _num(self.smallest_normal), "smallest_subnormal": _num(self.smallest_subnormal),
            "eps": _num(self.eps), "inf": self.has_inf, "nan": self.has_nan, "neg_zero": self.has_neg_zero,
            "finite_values": self.count_finite(),
        }

    def __str__(self):
        return self.name


# ---- helpers --------------------------------------------------------------------------------------

def to_fraction(value) -> Fraction:
    """An exact rational from int, float (incl. numpy and ml_dtypes scalars), Fraction or hex string."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Fraction(int(value))
    if isinstance(value, str):
        s = value.strip()
        try:
            return Fraction(float.fromhex(s)) if ("0x" in s.lower()) else Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"not a number: {value!r}") from None
    x = float(value)  # ml_dtypes scalars convert exactly to float
    if not math.isfinite(x):
        raise ValueError(f"not finite: {value!r}")
    return Fraction(x)


def floor_log2(a: Fraction) -> int:
    """floor(log2(a)) for a > 0, exactly."""
    n, d = a.numerator, a.denominator
    e = n.bit_length() - d.bit_length()
    if e >= 0:
        if n < (d << e):
            e -= 1
    else:
        if (n << -e) < d:
            e -= 1
    return e


def num_text(q, digits: int = 20) -> str:
    """A rational as text for messages: the float repr when that is exact, else ``digits`` significant
    digits.  Never raises, also for rationals beyond float64's range (``float()`` overflows there)."""
    q = Fraction(q)
    try:
        x = float(q)
        if Fraction(x) == q:
            return repr(x)
    except OverflowError:
        pass
    import mpmath
    with mpmath.workdps(digits + 10):
        return mpmath.nstr(mpmath.mpf(q.numerator) / q.denominator, digits)


def _value_text(value) -> str:
    """``value`` as the user gave it; a rational too long to read is shown as its decimal value."""
    text = repr(value)
    if len(text) > 80:
        try:
            return num_text(to_fraction(value)) + " (rational)"
        except (ValueError, OverflowError, TypeError):
            return text[:80] + "..."
    return text


def _num(q: Fraction):
    x = float(q)
    return x if x != 0 and Fraction(x) == q else str(q)


def _uint_dtype(itemsize: int):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize]


def _neighbours(fmt: Format, q: Fraction) -> tuple[Fraction | None, Fraction | None]:
    """The values of fmt just below and just above the nonzero rational q, which is not one of them
    (None beyond the range): the grid points around |q| at the spacing of its binade."""
    a = abs(q)
    if a > fmt.max:
        lo, hi = fmt.max, None
    else:
        quantum = Fraction(2) ** fmt.ulp_exponent(floor_log2(a))
        lo = (a // quantum) * quantum
        hi = lo + quantum
    return (lo, hi) if q > 0 else (None if hi is None else -hi, -lo)


def _nearest_text(fmt: Format, q: Fraction) -> str:
    return " and ".join(num_text(v) for v in _neighbours(fmt, q) if v is not None) or "none"


@lru_cache(maxsize=None)
def _values_float64_cached(fmt: Format) -> np.ndarray:
    if not fmt.enumerable:
        raise CondcheckError(f"{fmt.name} has {fmt.count_finite():,} finite values; enumerating it as an "
                             f"array is limited to formats of at most {MAX_ENUMERATION_BITS} bits")
    if not fmt.fits_float64:
        raise CondcheckError(f"{fmt.name}: its values do not all fit float64, so they cannot be listed as float64 numbers")
    M = fmt.M
    pos = [np.arange(1, 2 ** M, dtype=np.float64) * 2.0 ** (fmt.e_min - M)]
    sig = np.arange(2 ** M, 2 ** (M + 1), dtype=np.float64)
    for e in range(fmt.e_min, fmt.e_max + 1):
        pos.append(sig * 2.0 ** (e - M))
    p = np.concatenate(pos)
    p = p[p <= float(fmt.max)]
    out = np.concatenate([-p[::-1], [0.0], p])
    out.setflags(write=False)
    return out


def _values_float64(fmt: Format) -> np.ndarray:
    return _values_float64_cached(fmt)


def _values_fraction(fmt: Format) -> list[Fraction]:
    if not fmt.enumerable:
        raise CondcheckError(f"{fmt.name} is too large to enumerate ({fmt.bits} bits)")
    M = fmt.M
    pos = [Fraction(k) * Fraction(2) ** (fmt.e_min - M) for k in range(1, 2 ** M)]
    for e in range(fmt.e_min, fmt.e_max + 1):
        pos += [Fraction(k) * Fraction(2) ** (e - M) for k in range(2 ** M, 2 ** (M + 1))]
    pos = [v for v in pos if v <= fmt.max]
    return [-v for v in reversed(pos)] + [Fraction(0)] + pos


# ---- construction of formats ----------------------------------------------------------------------

def ieee_format(M: int, E: int, name: str | None = None, dtype: str | None = None) -> Format:
    """The IEEE-like binary format with M fraction bits and E exponent bits (bias 2**(E-1)-1); ``dtype``
    names its numpy dtype, if it has one."""
    if M < 1 or E < 2:
        raise CondcheckError(f"custom format b{M}_{E}: need at least 1 fraction bit (M >= 1) and 2 exponent "
                             f"bits (E >= 2)")
    e_max = 2 ** (E - 1) - 1
    e_min = 2 - 2 ** (E - 1)
    top = Fraction(2 ** (M + 1) - 1) * Fraction(2) ** (e_max - M)
    return Format(name=name or f"b{M}_{E}", bits=1 + E + M, M=M, E=E, e_min=e_min, e_max=e_max, max=top,
                  has_inf=True, has_nan=True, has_neg_zero=True, ieee=True,
                  dtype_name=dtype)


#: the fields of the float16 and ml_dtypes formats, (bits, M, E, e_min, e_max, Omega, has_inf, has_nan,
#: has_neg_zero), as :func:`derive_from_encodings` reads them off ml_dtypes' decoding of every bit pattern
#: (tests/test_formats.py derives them again and compares; none of these is IEEE-encoded in condcheck's
#: sense: ``ieee`` is False, as the derivation sets it)
ENCODED_FIELDS = {
    "float16": (16, 10, 5, -14, 15, "0x1.ffcp+15", True, True, True),
    "bfloat16": (16, 7, 8, -126, 127, "0x1.fep+127", True, True, True),
    "float8_e5m2": (8, 2, 5, -14, 15, "0x1.cp+15", True, True, True),
    "float8_e4m3": (8, 3, 4, -6, 7, "0x1.ep+7", True, True, True),
    "float8_e4m3fn": (8, 3, 4, -6, 8, "0x1.cp+8", False, True, True),
    "float8_e3m4": (8, 4, 3, -2, 3, "0x1.fp+3", True, True, True),
    "float8_e5m2fnuz": (8, 2, 5, -15, 15, "0x1.cp+15", False, True, False),
    "float8_e4m3fnuz": (8, 3, 4, -7, 7, "0x1.ep+7", False, True, False),
    "float8_e4m3b11fnuz": (8, 3, 4, -10, 4, "0x1.ep+4", False, True, False),
    "float6_e3m2fn": (6, 2, 3, -2, 4, "0x1.cp+4", False, False, True),
    "float6_e2m3fn": (6, 3, 2, 0, 2, "0x1.ep+2", False, False, True),
    "float4_e2m1fn": (4, 1, 2, 0, 2, "0x1.8p+2", False, False, True),
}


def _encoded_format(name: str) -> Format:
    bits, M, E, e_min, e_max, top, has_inf, has_nan, has_neg_zero = ENCODED_FIELDS[name]
    return Format(name=name, bits=bits, M=M, E=E, e_min=e_min, e_max=e_max, max=Fraction(float.fromhex(top)),
                  has_inf=has_inf, has_nan=has_nan, has_neg_zero=has_neg_zero, ieee=False, dtype_name=name)


def derive_from_encodings(name: str) -> Format:
    """Read a format's fields off its decoded bit patterns (numpy's float16, or ml_dtypes) and check them
    against the value grid: the source of :data:`ENCODED_FIELDS`."""
    import ml_dtypes
    dt = np.dtype(name) if name in NUMPY_FORMATS else np.dtype(getattr(ml_dtypes, name))
    fi = ml_dtypes.finfo(dt) if name not in NUMPY_FORMATS else np.finfo(dt)
    bits = int(getattr(fi, "bits", dt.itemsize * 8))
    patterns = np.arange(2 ** bits, dtype=np.uint32).astype(_uint_dtype(dt.itemsize))
    with np.errstate(invalid="ignore"):
        decoded = patterns.view(dt).astype(np.float64)
    finite = decoded[np.isfinite(decoded)]
    zero_mask = finite == 0
    if not zero_mask.any():
        raise CondcheckError(f"format {name} has no zero")
    has_neg_zero = bool(np.any(np.signbit(finite[zero_mask])))
    pos = np.unique(finite[finite > 0])
    M = int(fi.nmant)
    omega_min = Fraction(float(pos[0]))
    e_min = floor_log2(omega_min) + M          # smallest subnormal is 2**(e_min - M)
    top = Fraction(float(pos[-1]))
    e_max = floor_log2(top)
    E = int(fi.nexp)
    fmt = Format(name=name, bits=bits, M=M, E=E, e_min=e_min, e_max=e_max, max=top,
                 has_inf=bool(np.isinf(decoded).any()), has_nan=bool(np.isnan(decoded).any()),
                 has_neg_zero=has_neg_zero, ieee=False, dtype_name=name)
    grid = fmt.values()
    if not np.array_equal(np.unique(finite), grid):
        raise AssertionError(f"{name}: decoded values do not match the grid M={M}, e_min={e_min}, Omega={top}")
    return fmt


@lru_cache(maxsize=None)
def _builtin(name: str) -> Format:
    if name == "float32":
        return ieee_format(23, 8, "float32", "float32")
    if name == "float64":
        return ieee_format(52, 11, "float64", "float64")
    return _encoded_format(name)


def known_format_names() -> list[str]:
    return list(NUMPY_FORMATS) + list(ML_DTYPES_FORMATS)


def get_format(name) -> Format:
    """A format by name: numpy/ml_dtypes names, or ``bM_E`` for a custom IEEE-like format."""
    if isinstance(name, Format):
        return name
    if not isinstance(name, str):
        raise CondcheckError(f"format must be a name such as 'float8_e4m3' or 'b3_6', not {name!r}")
    key = name.strip()
    if key in REFUSED_FORMATS:
        raise CondcheckError(f"format {key!r} is not supported: {REFUSED_FORMATS[key]}")
    if key in NUMPY_FORMATS or key in ML_DTYPES_FORMATS:
        return _builtin(key)
    m = _CUSTOM.match(key)
    if m:
        M, E = int(m.group(1)), int(m.group(2))
        if f"b{M}_{E}" != key:
            raise CondcheckError(f"custom format {key!r}: write it b{M}_{E} (no leading zeros)")
        if E > MAX_CUSTOM_E:
            raise CondcheckError(f"custom format {key!r} has E = {E} exponent bits; at most {MAX_CUSTOM_E} are supported")
        if (M, E) == (52, 11):
            return _builtin("float64")
        if (M, E) == (23, 8):
            return _builtin("float32")
        if M + E + 1 > 128:
            raise CondcheckError(f"custom format {key!r} has {M + E + 1} bits; at most 128 are supported")
        return ieee_format(M, E, key)
    raise UnknownNameError("format", key, known_format_names() + ["bM_E (custom, e.g. b3_6)"])


def all_formats() -> list[Format]:
    return [get_format(n) for n in known_format_names()]
