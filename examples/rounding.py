"""RN_F on exact rationals, and the fast path that computes the same values (docs/semantics.md)."""
from fractions import Fraction as Q

import numpy as np

from condcheck import CondcheckError, get_format, get_rounded, round_fraction
from condcheck.ops import add_array

e4m3 = get_format("float8_e4m3")                  # B(3, 4): values 1, 1.125, ..., 16, 18, 20, ..., 240
for q in (Q(17), Q(19), Q(1, 3), Q(247), Q(-1, 1024)):
    print(f"RN({q}) = {round_fraction(q, e4m3)}")
try:
    round_fraction(Q(248), e4m3)                  # a tie between 240 and 256: the even one, 256, overflows
except CondcheckError as e:
    print(e)
print(f"RN(464) in float8_e4m3fn = {round_fraction(Q(464), get_format('float8_e4m3fn'))}")

# The fast path: float64 arithmetic, then RN_F once.  Exact for float8_e4m3 (p = 4 significand bits:
# a product of two values is exact in float64, and 53 >= 2p + 1 makes the double rounding of a sum
# innocuous), so it equals the exact rounding on every pair of values.
v = e4m3.values()
a, b = np.meshgrid(v, v)
fast, overflow = add_array(a.ravel(), b.ravel(), e4m3)
exact = [round_fraction(Q(x) + Q(y), e4m3) if abs(Q(x) + Q(y)) < 248 else None
         for x, y in zip(a.ravel(), b.ravel())]
same = all((e is None and o) or (e is not None and not o and Q(f) == e) for f, o, e in zip(fast, overflow, exact))
print(f"{len(exact)} sums of float8_e4m3 values: fast path equals the exact rounding: {same}")

gelu = get_rounded("gelu", "float8_e4m3")         # sigma~ = RN(gelu), sigma~' = RN(gelu'), correctly rounded
print(f"gelu~(-3.25) = {gelu.value(Q(-13, 4))}, gelu~'(0) = {gelu.derivative(Q(0))}")
