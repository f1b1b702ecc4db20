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

from . import library
from .dyadic import bracket, parts, precision_for, real_text, term
from .recipes import recipe_for

#: facts per generated file
CHUNK = 60
#: GELU at |z| >= GELU_CUTOFF * sqrt 2 is bounded from erf(+-GELU_CUTOFF) (lib/ErfBounds.v)
GELU_CUTOFF = 5
SQRT2 = 2 ** 0.5
#: ErfBounds.v: 1 - erf 5 lies in [15e-13, 16e-13]
ERF5_GAP = (mpmath.mpf(15) / 10 ** 13, mpmath.mpf(16) / 10 ** 13)
#: bits at which sigma(z) is evaluated to choose the bounds (Coq re-proves them; nothing depends on it)
EVAL_PRECISION = 256


@dataclass(frozen=True)
class Fact:
    name: str
    derivative: bool
    lo: Fraction
    hi: Fraction
    value: Optional[Fraction]      # None: overflow
    proof: Optional[str]           # None: out of reach, a hypothesis of the theorem (see ``why``)
    why: str = ""
    premise: str = ""              # a hypothesis the proof uses (H_dead_tail: the fact is read from it)

    @property
    def hypothesis(self) -> str:
        """The name of the hypothesis standing for this fact (when ``proof`` is None)."""
        return f"H_{self.name}"

    def coq_fact(self) -> str:
        res = f"(Fin {term(self.value)})" if self.value is not None else "Ovf"
        return f"(Fact {term(self.lo)} {term(self.hi)} {res})"


class FactMaker:
    """Facts about one activation on one format, named ``s_<n>`` (sigma) and ``d_<n>`` (sigma')."""

    def __init__(self, activation: str, fmt: Format, fmt_coq: str, wf_coq: str, wide: bool = False):
        self.wide = wide
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

    def real_value(self, derivative: bool, z: Fraction, prec: int = EVAL_PRECISION) -> mpmath.mpf:
        with mpmath.workprec(prec):
            return +self._fn[derivative](mpmath.mpf(z.numerator) / z.denominator)

    def _bracket(self, derivative: bool, z: Fraction, v: Fraction):
        """(y, lo, hi, margin): sigma(z) and :func:`bracket` of it, evaluated with more bits where
        cancellation (GELU's 1 + erf far below 0) leaves too few at :data:`EVAL_PRECISION`."""
        for prec in (EVAL_PRECISION, 4 * EVAL_PRECISION, 16 * EVAL_PRECISION):
            y = self.real_value(derivative, z, prec)
            try:
                return (y, *bracket(y, v, self.fmt))
            except ValueError:
                if prec == 16 * EVAL_PRECISION:
                    raise

    def point(self, derivative: bool, z, dead: bool = False) -> Fact:
        """The fact at z (made once); with ``dead`` (z <= z_d, the dead tail a premise), read from the
        premise H_dead_tail where it is out of reach otherwise."""
        z = Fraction(z)
        key = (derivative, z)
        if key not in self._made:
            n = self._count[derivative]
            self._count[derivative] += 1
            name = f"{'d' if derivative else 's'}_{n}"
            f = self._point(derivative, z, name)
            self._made[key] = self._dead(derivative, z, name) if dead and f.proof is None else f
        return self._made[key]

    def _dead(self, derivative: bool, z: Fraction, name: str) -> Fact:
        v = self.rounded_value(derivative, z)
        F, A = self.fmt_coq, self.recipe.record
        lemma = (f"dead_fact_dsigma {F} {self.wf_coq} {A} (w1_z_d witness_1) (w1_L witness_1) h_dead_tail {term(z)}"
                 if derivative else
                 f"dead_fact_sigma {F} {self.wf_coq} {A} (w1_z_d witness_1) {term(v)} h_dead_tail {term(z)}")
        return Fact(name, derivative, z, z, v, f"intros h_dead_tail. exact ({lemma} (eq_refl true)).",
                    premise="H_dead_tail")

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
        y, lo, hi, margin = self._bracket(derivative, z, v)
        prec = precision_for(margin, max(1.0, abs(float(z)), abs(float(y))))
        tactic = None
        if r.name == "gelu" and abs(z) >= GELU_CUTOFF * SQRT2:
            tactic = self._gelu_beyond_cutoff(derivative, z, lo, hi)
            if tactic is None and self.wide:
                g_text = ("sigma'" if derivative else "sigma") + f"({_short(z)})"
                return Fact(name, derivative, z, z, v, None,
                            f"RN({g_text}) = {_short(v)}: needs erf({_short(z)}/sqrt 2) closer than the bounds at "
                            f"the cutoff +-5 (ErfBounds.v) give, and integrating exp(-t^2) that far is out of reach")
        if tactic is None:
            tactic = r.bounds_tactic(derivative, z, prec).strip()
        text = head.format(lemma="fact_point_by_bounds", args=f"{term(lo)} {term(hi)}") + "\ndyadic_to_R. " + tactic
        return Fact(name, derivative, z, z, v, text)

    @property
    def uses_erf_bounds(self) -> bool:
        return any(f.proof and ("erf_m5_bounds" in f.proof or "erf_5_bounds" in f.proof) for f in self._made.values())

    def _gelu_beyond_cutoff(self, derivative: bool, z: Fraction, lo: Fraction, hi: Fraction):
        """GELU or GELU' at |z| >= 5 sqrt 2: erf(z / sqrt 2) bounded from erf(+-5) (ErfBounds.v) and the
        Gaussian tail (Activations.erf_below_cutoff / erf_above_cutoff); for GELU', x phi(x) bounded on
        its own first (``interval`` runs out of memory on exp(-x^2/2) next to an unknown erf at x = 57344).
        None when those bounds are too wide for [lo, hi] (the direct integral is used then)."""
        c = GELU_CUTOFF
        with mpmath.workprec(EVAL_PRECISION):
            tail = mpmath.exp(-c * c) / (c * mpmath.sqrt(mpmath.pi))
            zz = mpmath.mpf(z.numerator) / z.denominator
            if z < 0:
                e_lo, e_hi = -1 + ERF5_GAP[0] - tail, -1 + ERF5_GAP[1]
            else:
                e_lo, e_hi = 1 - ERF5_GAP[1], 1 - ERF5_GAP[0] + tail
            g = zz * mpmath.exp(-zz * zz / 2) / mpmath.sqrt(2 * mpmath.pi)
            ends = [(1 + e) / 2 + g for e in (e_lo, e_hi)] if derivative else [zz / 2 * (1 + e) for e in (e_lo, e_hi)]
            room = min(min(ends) - _mpq(lo), _mpq(hi) - max(ends))
            if room <= 0:
                return None
            prec = precision_for(Fraction(float(room)), max(1.0, abs(float(z))))
            slack = room / 4
            g_lo, g_hi = _dyadic_below(g - slack), _dyadic_above(g + slack)
        m, e = parts(z)
        x = f"(IZR ({m}) * bpow radix2 ({e}))"
        if z < 0:
            lemma = (f"erf_below_cutoff (-5) (- 1 + 15 / 10000000000000) (- 1 + 16 / 10000000000000) ({x} / sqrt 2) "
                     f"ltac:(split; [interval with (i_prec 53) | lra]) erf_m5_bounds")
        else:
            lemma = (f"erf_above_cutoff 5 (1 - 16 / 10000000000000) (1 - 15 / 10000000000000) ({x} / sqrt 2) "
                     f"ltac:(split; [lra | interval with (i_prec 53)]) erf_5_bounds")
        lines = [f"assert (He := {lemma})."]
        if derivative:
            lines.append(f"assert (Hg : F2R {term(g_lo)} <= x_phi {x} <= F2R {term(g_hi)})\n"
                         f"  by (unfold x_phi; dyadic_to_R; interval with (i_prec {prec})).")
            lines.append(f"dyadic_to_R. unfold dgelu. interval with (i_prec {prec}).")
        else:
            lines.append(f"unfold gelu. interval with (i_prec {prec}).")
        return "\n".join(lines)


def _short(q: Fraction) -> str:
    """q exactly when short, else to 6 significant digits (the exact value is in the Coq statement)."""
    t = real_text(q)
    return t if len(t) <= 24 else f"about {float(q):.6g}"


def _mpq(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def _dyadic_below(y: mpmath.mpf) -> Fraction:
    """A dyadic <= y with about 40 significant bits (0 for y = 0)."""
    if y == 0:
        return Fraction(0)
    e = int(mpmath.floor(mpmath.log(abs(y), 2))) - 40
    return Fraction(int(mpmath.floor(y / mpmath.mpf(2) ** e))) * Fraction(2) ** e


def _dyadic_above(y: mpmath.mpf) -> Fraction:
    return -_dyadic_below(-y)


HEADER = """From Coq Require Import ZArith Reals List Lra.
From Flocq Require Import Core.
From Coquelicot Require Import Coquelicot.
From Condcheck Require Import IntervalZ Format Dyadic Activations Rounded.{erf}
From Cert Require Import Data.
Import ListNotations.
Open Scope R_scope.
"""


def _lemma(f: Fact, fmt_coq: str, fn: str, record: str) -> str:
    pre = f"{f.premise} -> " if f.premise else ""
    return f"Lemma {f.name} : {pre}fact_holds {fmt_coq} ({fn} {record}) {f.coq_fact()}.\nProof.\n{f.proof}\nQed.\n"


def hypothesis_names(facts: list[Fact]) -> list[str]:
    """The premises ``facts`` take: the hypotheses standing for facts out of reach, and those proofs use."""
    out = []
    for f in facts:
        n = f.hypothesis if f.proof is None else f.premise
        if n and n not in out:
            out.append(n)
    return out


def _fact_term(f: Fact) -> str:
    """The proof of fact f in a list's Forall (h_x: the premise H_x introduced)."""
    if f.proof is None:
        return "h" + f.hypothesis[1:]
    return f"({f.name} h{f.premise[1:]})" if f.premise else f.name


def _premises(names: list[str]) -> tuple[str, str]:
    """("H_a -> H_b -> ", "intros h_a h_b.\n") for the hypotheses ``names``."""
    if not names:
        return "", ""
    return "".join(f"{n} -> " for n in names), "intros " + " ".join("h" + n[1:] for n in names) + ".\n"


def chunk_file(facts: list[Fact], chunk: str, fmt_coq: str, record: str) -> str:
    """A file of fact lemmas, the list ``<chunk>`` of their facts and ``<chunk>_ok`` (which takes the
    hypotheses standing for the facts out of reach)."""
    fn = "dsigma" if facts and facts[0].derivative else "sigma"
    erf = "\nFrom Condcheck Require Import ErfBounds." if any(f.proof and "erf_" in f.proof and "_bounds" in f.proof
                                                            for f in facts) else ""
    hyps = hypothesis_names(facts)
    premises = "From Condcheck Require Import Condition1 Cover.\nFrom Cert Require Import Hypotheses.\n"
    out = [HEADER.format(erf=erf) + (premises if hyps else "")]
    for f in facts:
        if f.proof is not None:
            out.append(_lemma(f, fmt_coq, fn, record))
    out.append(f"Definition {chunk} : list fact := [\n  " + ";\n  ".join(f.coq_fact() for f in facts) + "].\n")
    body = "".join(f"constructor; [exact {_fact_term(f)}|].\n" for f in facts)
    pre, intro = _premises(hyps)
    out.append(f"Lemma {chunk}_ok : {pre}List.Forall (fact_holds {fmt_coq} ({fn} {record})) {chunk}.\nProof.\n"
               f"{intro}unfold {chunk}.\n{body}constructor.\nQed.\n")
    return "\n".join(out)


def facts_file(chunks: dict, fmt_coq: str, record: str, tail: bool = False) -> str:
    """Facts.v: ``sigma_facts``, ``dsigma_facts`` and their proofs, from the chunk files (``chunks``:
    {"s": [(file, hypotheses)], "d": [...]}); with ``tail``, the dead tail's chains come first."""
    files = " ".join(([TAIL_FILE] if tail else []) + [c for c, _ in chunks["s"] + chunks["d"]])
    hyps_any = any(h for key in ("s", "d") for _, h in chunks[key])
    out = ["From Coq Require Import List.", "From Condcheck Require Import Format Activations Rounded.",
           f"From Cert Require Import Data {files}." if files else "From Cert Require Import Data.",
           *(["From Cert Require Import Hypotheses."] if hyps_any else []), "Import ListNotations.", ""]
    for key, fn, lst in (("s", "sigma", "sigma_facts"), ("d", "dsigma", "dsigma_facts")):
        names = ([f"{fn}_tail"] if tail else []) + [f"{c.lower()}" for c, _ in chunks[key]]
        out.append(f"Definition {lst} : list fact := " + " ++ ".join(names + ["[]"]) + ".")
        all_h = list(dict.fromkeys(h for _, hs in chunks[key] for h in hs))
        body = "".join(f"apply Forall_app; split; [exact ({c.lower()}_ok{''.join(' h' + h[1:] for h in hs)})|].\n"
                       for c, hs in chunks[key])
        if tail:
            body = f"apply Forall_app; split; [exact {fn}_tail_ok|].\n" + body
        pre, intro = _premises(all_h)
        out.append(f"Lemma {lst}_ok : {pre}Forall (fact_holds {fmt_coq} ({fn} {record})) {lst}.\n"
                   f"Proof.\n{intro}unfold {lst}.\n{body}constructor.\nQed.\n")
    return "\n".join(out)


#: the file of the dead tail's chains (wide formats)
TAIL_FILE = "Facts_tail"


def tail_file(sigma_facts: list[Fact], dsigma_facts: list[Fact], fmt_coq: str, record: str) -> str:
    """Facts_tail.v: the chains ``sigma_tail`` / ``dsigma_tail`` of the dead tail and their proofs."""
    out = [HEADER.format(erf="").replace("Rounded.", "Rounded Cover.")]
    for facts, fn in ((sigma_facts, "sigma"), (dsigma_facts, "dsigma")):
        for f in facts:
            out.append(_lemma(f, fmt_coq, fn, record))
        out.append(f"Definition {fn}_tail : list fact := [\n  " + ";\n  ".join(f.coq_fact() for f in facts) + "].\n")
        body = "".join(f"constructor; [exact {f.name}|].\n" for f in facts)
        out.append(f"Lemma {fn}_tail_ok : List.Forall (fact_holds {fmt_coq} ({fn} {record})) {fn}_tail.\nProof.\n"
                   f"unfold {fn}_tail.\n{body}constructor.\nQed.\n")
    return "\n".join(out)


def write_facts(out, facts: dict, fmt_coq: str, record: str, tail: Optional[tuple] = None) -> list[str]:
    """Write the chunk files of ``facts`` ({"s": [...], "d": [...]}), with ``tail`` (the dead tail's
    sigma and sigma' chains) Facts_tail.v, and Facts.v into ``out``; returns the files written, in
    dependency order."""
    chunks = {"s": [], "d": []}
    for key in ("s", "d"):
        lst = facts[key]
        for i in range(0, len(lst), CHUNK):
            name = f"Facts_{key}_{i // CHUNK}"
            part = lst[i:i + CHUNK]
            chunks[key].append((name, hypothesis_names(part)))
            text = chunk_file(part, name.lower(), fmt_coq, record)
            library.write_if_changed(out / f"{name}.v", text)
    files = []
    if tail is not None:
        library.write_if_changed(out / f"{TAIL_FILE}.v", tail_file(tail[0], tail[1], fmt_coq, record))
        files.append(f"{TAIL_FILE}.v")
    library.write_if_changed(out / "Facts.v", facts_file(chunks, fmt_coq, record, tail=tail is not None))
    return files + [f"{c}.v" for c, _ in chunks["s"] + chunks["d"]] + ["Facts.v"]
