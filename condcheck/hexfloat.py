"""Numbers in interchange files: hexadecimal floating-point text, read strictly (docs/file-formats.md).

Every number in a network file, a targets file and a condition certificate is the exact value of a
binary float written in hexadecimal, as Python's ``float.hex()`` writes it.  Accepted, and nothing
else (no decimal numbers, no JSON numbers, no whitespace, no ``inf``/``nan``):

    [-]0x<hex digits>[.<hex digits>]p(+|-)<decimal digits>

* ``0x`` and the binary exponent ``p...`` with its sign are required: ``"10"`` is refused (Python's
  ``float.fromhex`` would read it as sixteen), and so is ``"0x1.8"``;
* the short forms a person writes (``0x1.8p+1``, ``0x1p-3``, ``-0x0p+0``) are accepted as well as
  ``float.hex()``'s own (``0x1.8000000000000p+1``); an integer significand (``0x5p-2``) too, as
  ``conditions.verdict.hex_text`` writes values beyond float64's range;
* :func:`parse_float64` also requires the value to be a float64 *exactly*: ``float.fromhex`` rounds
  a text with more significant digits than a float64 holds, and such a text is refused rather than
  read as a nearby number.

Errors are :class:`~condcheck.errors.CondcheckError` with a one-line message naming the field.
"""
from __future__ import annotations

import re
from fractions import Fraction

from .errors import CondcheckError

_HEX = re.compile(r"^(-?)0x([0-9a-fA-F]+)(?:\.([0-9a-fA-F]*))?p([+-][0-9]+)$")
#: the form accepted, for messages
HEX_FORM = "a hexadecimal float such as '0x1.8p+1' or '-0x1.0000000000000p-3' (float.hex form)"
#: exponents beyond this are refused (no format condcheck supports comes near; keeps parsing cheap)
MAX_EXPONENT_DIGITS = 7


class HexFloatError(CondcheckError, ValueError):
    """A number in a file that is not in the accepted hexadecimal form."""


def _shown(text) -> str:
    t = repr(text)
    return t if len(t) <= 40 else t[:37] + "..."


def parse_exact(text, where: str) -> Fraction:
    """The exact value of a hexadecimal float text (any size); ``where`` names the field in errors."""
    if not isinstance(text, str):
        raise HexFloatError(f"{where}: {_shown(text)} is a {type(text).__name__}, not a string; every number is "
                            f"{HEX_FORM}")
    m = _HEX.match(text)
    if m is None:
        raise HexFloatError(f"{where}: {_shown(text)} is not {HEX_FORM}")
    sign, whole, frac, exp = m.groups()
    frac = frac or ""
    if len(exp) - 1 > MAX_EXPONENT_DIGITS:
        raise HexFloatError(f"{where}: {_shown(text)} has an exponent of more than {MAX_EXPONENT_DIGITS} digits")
    n = int(whole + frac, 16)
    e = int(exp) - 4 * len(frac)
    q = Fraction(n) * (Fraction(2) ** e)
    return -q if sign else q


def parse_float64(text, where: str) -> float:
    """A hexadecimal float text that is exactly a finite float64, as that float."""
    q = parse_exact(text, where)
    try:
        v = float.fromhex(text)
    except OverflowError:
        raise HexFloatError(f"{where}: {_shown(text)} is beyond the float64 range") from None
    if Fraction(v) != q:
        raise HexFloatError(f"{where}: {_shown(text)} is not exactly a float64 (it has more significant digits "
                            f"than 53 bits, or is below the smallest subnormal)")
    return v
