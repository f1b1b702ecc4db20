"""How to prove, in Coq, what sigma or sigma' is at a dyadic point: one recipe per activation.

The Coq library (``coq/Activations.v``) defines the six activations of the paper on R.  A recipe says,
for condcheck's activation of the same name:

* where sigma (or sigma') is exactly a dyadic number (ReLU everywhere, ELU for z > 0, every activation
  at 0) and which library lemma proves it (``coq/Rounded.v``, ``*_exact``): the value is then rounded by
  computation, also on a tie (sigmoid'(0) = 1/4 rounds to 0 in float4_e2m1fn);
* elsewhere, the tactic that proves real bounds lo <= sigma(z) <= hi: ``interval`` on the elementary
  functions, ``integral`` on GELU's erf (an integral of exp(-t^2)).

The exact values stated here are re-derived by sympy in the tests, from condcheck's own expressions.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from condcheck.errors import CondcheckError



@dataclass(frozen=True)
class Recipe:
    name: str                 # condcheck's activation name
    record: str               # the Coq activation record (sigma, dsigma)
    coq: tuple                # Coq names of sigma and sigma'
    unfold: tuple             # the tactic that exposes each function to interval / integral
    uses_integral: bool = False

    def function(self, derivative: bool) -> str:
        return self.coq[1 if derivative else 0]

    def exact(self, derivative: bool, z: Fraction) -> Optional[tuple[Fraction, str]]:
        """(y, proof of ``g (F2R z) = F2R y``) where g(z) is the dyadic y, else None."""
        f = self.function(derivative)
        if self.name == "relu" or (self.name == "elu" and z > 0):
            if z > 0:
                y = Fraction(1) if derivative else z
                return y, f"apply {f}_pos_exact; vm_compute; reflexivity."
            if self.name == "relu":
                return Fraction(0), f"apply {f}_nonpos_exact; vm_compute; reflexivity."
        if z == 0:
            return ZERO_VALUES[(self.name, derivative)], f"exact {f}_0_exact."
        return None

    def bounds_tactic(self, derivative: bool, z: Fraction, prec: int) -> str:
        """The tactic proving ``lo <= g z <= hi`` once dyadics are reals (after ``dyadic_to_R``)."""
        tac = "integral" if self.uses_integral else "interval"
        return f"{self.unfold[1 if derivative else 0]} {tac} with (i_prec {prec})."


#: sigma(0) and sigma'(0) of each activation (exact values; the tests re-derive them with sympy)
ZERO_VALUES = {
    ("relu", False): Fraction(0), ("relu", True): Fraction(0),
    ("elu", False): Fraction(0), ("elu", True): Fraction(1),
    ("gelu", False): Fraction(0), ("gelu", True): Fraction(1, 2),
    ("swish", False): Fraction(0), ("swish", True): Fraction(1, 2),
    ("sigmoid", False): Fraction(1, 2), ("sigmoid", True): Fraction(1, 4),
    ("tanh", False): Fraction(0), ("tanh", True): Fraction(1),
}

RECIPES = {
    "relu": Recipe("relu", "RELU", ("relu", "drelu"), ("", "")),
    "elu": Recipe("elu", "ELU", ("elu", "delu"), ("rewrite elu_le0 by interval with (i_prec 53).",
                                                    "rewrite delu_le0 by interval with (i_prec 53).")),
    "gelu": Recipe("gelu", "GELU", ("gelu", "dgelu"), ("unfold gelu, erf, gauss.", "unfold dgelu, x_phi, erf, gauss."),
                   uses_integral=True),
    "swish": Recipe("swish", "SWISH", ("swish", "dswish"), ("unfold swish.", "unfold dswish.")),
    "sigmoid": Recipe("sigmoid", "SIGMOID", ("sigmoid", "dsigmoid"), ("unfold sigmoid.", "unfold dsigmoid.")),
    "tanh": Recipe("tanh", "TANH", ("tanh", "dtanh"), ("rewrite tanh_exp.", "rewrite dtanh_exp.")),
}


def recipe_for(activation: str) -> Recipe:
    """The recipe of one of the six paper activations, or a one-line error."""
    try:
        return RECIPES[activation]
    except KeyError:
        raise CondcheckError(f"no Coq definition for activation {activation!r}: proofs cover the paper's "
                             f"activations {', '.join(RECIPES)}") from None

