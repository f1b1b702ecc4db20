"""The negative controls: activations that must fail Conditions 1-3, and the clause each fails first."""
import sympy

from condcheck import check_activation, register_activation
from condcheck.activations import x

register_activation("identity", x)                                  # no gradient suppression
register_activation("constant", sympy.Integer(3))                   # no live state
register_activation("step", sympy.Piecewise((0, x < 0), (1, True))) # derivative 0 everywhere

for name in ("identity", "constant", "step"):
    r = check_activation(name, "float8_e4m3")
    fails = [f"C{k} " + " and ".join(part.split()[0] for part in r.conditions[k]["failing_clause"].split(";"))
             for k in "123" if r.conditions[k]["holds"] is False]
    print(f"{name:9s} holds={r.holds}  fails: {', '.join(fails)}")
