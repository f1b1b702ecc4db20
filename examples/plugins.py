"""Three ways to plug in an activation, then check Conditions 1-3 for each (docs/plugins.md)."""
import mpmath
import sympy

from condcheck import CondcheckError, check_activation, register_activation
from condcheck.activations import x

register_activation("softsign", x / (1 + sympy.Abs(x)))                  # sympy expression: certified
register_activation("smelu", "Piecewise((0, x <= -1), ((x + 1)**2/4, x <= 1), (x, True))")   # a string
register_activation("asinh", function=mpmath.asinh,                       # mpmath callables: trusted
                    derivative=lambda t: 1 / mpmath.sqrt(1 + t * t))

for name in ("softsign", "smelu", "asinh"):
    for fmt in ("float8_e4m3", "float6_e3m2fn"):
        r = check_activation(name, fmt)
        verdicts = " ".join(f"C{k}:{r.conditions[k]['verdict']}" for k in "123")
        print(f"{name:9s} {fmt:14s} {r.holds!s:5s} {verdicts} {(r.conditions['1']['failing_clause'] or '').split(' ')[0]}")

try:    # a derivative that does not match its function is refused, naming the point
    register_activation("asinh2", function=mpmath.asinh, derivative=lambda t: 1 / (1 + t * t))
except CondcheckError as e:
    print(e)
