"""Per-value facts: what RN does to sigma or sigma' at a value of the format, with its Coq proof.

A fact (``coq/Rounded.v``) says that every real in [lo, hi] rounds, under sigma or sigma', to one value
v.  Here each fact is a single point z (lo = hi = z).  The rounded value v comes from condcheck's
certain rounding (:mod:`condcheck.rounded_activation`); Coq re-proves it from scratch:

* where sigma(z) is a dyadic number, exactly (a library lemma), and RN of it by computation;
* elsewhere from real bounds lo' <= sigma(z) <= hi' proved by ``interval``/``integral``, with lo', hi'
  chosen by :func:`condcheck.proofs.dyadic.bracket` so that both round to v.

The facts are written into chunk files of at most :data:`CHUNK` lemmas (so that ``make -j`` spreads
them over the cores), each ending with the list of its facts and the proof that all hold.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import mpmath
import sympy

from condcheck.activations import get_activation, x as X_SYMBOL
from condcheck.errors import CondcheckError, FormatOverflowError
from condcheck.formats import Format
from condcheck.rounded_activation import get_rounded
from condcheck.rounding import round_fraction

from .dyadic import bracket, precision_for, real_text, term
from .recipes import recipe_for

#: facts per generated file
CHUNK = 40
#: bits at which sigma(z) is evaluated to choose the bounds (Coq re-proves them; nothing depends on it)
EVAL_PRECISION = 256


@dataclass(frozen=True)
class Fact:
    name: str
    derivative: bool
    lo: Fraction
    hi: Fraction
    value: Optional[Fraction]      # None: overflow
    proof: str

    def coq_fact(self) -> str:
        res = f"(Fin {term(self.value)})" if self.value is not None else "Ovf"
        return f"(Fact {term(self.lo)} {term(self.hi)} {res})"


class FactMaker:
    """Facts about one activation on one format, named ``s_<n>`` (sigma) and ``d_<n>`` (sigma')."""

    def __init__(self, activation: str, fmt: Format, fmt_coq: str, wf_coq: str):
        self.recipe = recipe_for(activation)
        self.act = get_activation(activation)
        self.fmt = fmt
        self.fmt_coq, self.wf_coq = fmt_coq, wf_coq
        self.rounded = get_rounded(self.act, fmt, "exact")
        self._fn = {False: sympy.lambdify(X_SYMBOL, self.act.expr, "mpmath"),
                    True: sympy.lambdify(X_SYMBOL, self.act.derivative, "mpmath")}
        self._made: dict = {}
        self._count = {False: 0, True: 0}

    def rounded_value(self, derivative: bool, z: Fraction) -> Optional[Fraction]:
        try:
            return self.rounded.derivative(z) if derivative else self.rounded.value(z)
        except FormatOverflowError:
            return None

    def real_value(self, derivative: bool, z: Fraction) -> mpmath.mpf:
        with mpmath.workprec(EVAL_PRECISION):
            return +self._fn[derivative](mpmath.mpf(z.numerator) / z.denominator)

    def point(self, derivative: bool, z) -> Fact:
        """The fact at z (made once)."""
        z = Fraction(z)
        key = (derivative, z)
        if key not in self._made:
            n = self._count[derivative]
            self._count[derivative] += 1
            self._made[key] = self._point(derivative, z, f"{'d' if derivative else 's'}_{n}")
        return self._made[key]

    def facts(self, derivative: bool) -> list[Fact]:
        return [f for (d, _), f in self._made.items() if d == derivative]

    def _point(self, derivative: bool, z: Fraction, name: str) -> Fact:
        r = self.recipe
        g = r.function(derivative)
        v = self.rounded_value(derivative, z)
        what = ("sigma'" if derivative else "sigma") + f"({real_text(z)})"
        if v is None:
            raise CondcheckError(f"{self.act.name}: {what} overflows {self.fmt.name}; proofs of overflowing values "
                                 f"are not supported")
        head = f"apply ({{lemma}} {self.fmt_coq} {self.wf_coq} {g} {term(z)} {{args}} {term(v)}); " \
               f"[vm_compute; reflexivity|]."
        exact = r.exact(derivative, z)
        if exact is not None:
            y, proof = exact
            if round_fraction(y, self.fmt) != v:
                raise AssertionError(f"internal: exact {what} = {y} does not round to condcheck's {v}")
            text = head.format(lemma="fact_point_exact", args=term(y)) + "\n" + proof
            return Fact(name, derivative, z, z, v, text)
        y = self.real_value(derivative, z)
        lo, hi, margin = bracket(y, v, self.fmt)
        prec = precision_for(margin, max(1.0, abs(float(z)), abs(float(y))))
        text = (head.format(lemma="fact_point_by_bounds", args=f"{term(lo)} {term(hi)}") + "\n"
                + "dyadic_to_R. " + r.bounds_tactic(derivative, z, prec).strip())
        return Fact(name, derivative, z, z, v, text)


HEADER = """From Coq Require Import ZArith Reals List.
From Flocq Require Import Core.
From Coquelicot Require Import Coquelicot.
From Interval Require Import Tactic.
From Condcheck Require Import Format Dyadic Activations Rounded.
From Cert Require Import Data.
Import ListNotations.
Open Scope R_scope.
"""


def chunk_file(facts: list[Fact], chunk: str, fmt_coq: str, record: str) -> str:
    """A file of fact lemmas, the list ``<chunk>`` of their facts and ``<chunk>_ok``."""
    fn = "dsigma" if facts and facts[0].derivative else "sigma"
    out = [HEADER]
    for f in facts:
        out.append(f"Lemma {f.name} : fact_holds {fmt_coq} ({fn} {record}) {f.coq_fact()}.\nProof.\n{f.proof}\nQed.\n")
    out.append(f"Definition {chunk} : list fact := [\n  " + ";\n  ".join(f.coq_fact() for f in facts) + "].\n")
    body = "".join(f"constructor; [exact {f.name}|].\n" for f in facts)
    out.append(f"Lemma {chunk}_ok : List.Forall (fact_holds {fmt_coq} ({fn} {record})) {chunk}.\nProof.\nunfold {chunk}.\n"
               f"{body}constructor.\nQed.\n")
    return "\n".join(out)
