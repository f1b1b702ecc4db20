"""Write a Coq development that proves what a condition certificate says.

The directory holds, after :func:`write_development`:

* ``lib/``: condcheck's Coq library, copied from the package (:mod:`condcheck.proofs.library`): formats,
  the computable rounding, the activations, the statements of Conditions 1-3 and their checkers;
* ``Data.v``: the format (as Flocq's FLT_exp data and Omega) and the certificate's witnesses;
* ``Facts_s_<n>.v`` / ``Facts_d_<n>.v``: one lemma per value of sigma~ / sigma~' the proof uses;
* ``Facts.v``: the lists of those facts and the proofs that they hold;
* ``Main.v``: ``Theorem certificate_holds``, stating each condition (or its negation) and, for each
  condition that holds, every clause at the certificate's witness with the rounded values it states;
* ``_CoqProject``: checking is ``coq_makefile -f _CoqProject -o Makefile && make``.

Which values need a fact: the witness points; for Condition 1, every value up to z_d (the dead tail);
for a condition that fails, every value of the format (the negation quantifies over all of them, and
the library's refuters decide it by computation).
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from condcheck import __version__
from condcheck.errors import CondcheckError
from condcheck.formats import Format

from . import library
from .certificate import Claims, Witness1, Witness2, Witness3
from .dyadic import real_text, term
from .facts import FactMaker, write_facts
from .recipes import recipe_for

#: formats whose every value is enumerated inside Coq
MAX_BITS = 8


def coq_name(fmt: Format) -> str:
    return fmt.name


def format_definition(fmt: Format) -> str:
    """The Coq definition of a format and its well-formedness lemma."""
    name = coq_name(fmt)
    return (f"(** {fmt.name}: M = {fmt.M} fraction bits, e_min = {fmt.e_min}, e_max = {fmt.e_max}, "
            f"Omega = {real_text(fmt.max)} *)\n"
            f"Definition {name} : format := Format ({fmt.M}) ({fmt.e_min}) ({fmt.e_max}) {term(fmt.max)}.\n"
            f"Lemma {name}_wf : wf_format {name} = true.\nProof. vm_compute. reflexivity. Qed.\n")


def check_format(fmt: Format) -> None:
    """Formats the proofs cover: at most :data:`MAX_BITS` bits (a one-line error otherwise)."""
    if fmt.bits > MAX_BITS:
        raise CondcheckError(f"format {fmt.name} has {fmt.bits} bits; Coq proofs cover formats of at most "
                             f"{MAX_BITS} bits (every value is enumerated inside Coq)")


def check_supported(claims: Claims) -> None:
    """Refuse, with a one-line error, what the proofs do not cover (before any long work)."""
    check_format(claims.format)
    recipe_for(claims.activation)
    if claims.implementation != "exact":
        raise CondcheckError(f"Coq proofs cover the correctly rounded ('exact') implementation, not "
                             f"{claims.implementation!r}")


def plan(claims: Claims) -> tuple[set, set]:
    """The points where facts about sigma (first set) and sigma' (second set) are needed."""
    fmt = claims.format
    S, D = set(), set()
    if not all(claims.holds.values()):
        every = set(fmt.fractions())
        S |= every
        D |= every
    w1 = claims.witnesses.get("1")
    if w1 is not None:
        tail = {q for q in fmt.fractions() if q <= w1.z_dead}
        S |= tail | {-fmt.max, w1.live, w1.constant, w1.zero}
        D |= tail | {w1.pass_state}
    w2 = claims.witnesses.get("2")
    if w2 is not None:
        S |= {w2.delta_0, w2.delta_1}
        D |= {w2.delta_0, w2.delta_1}
    w3 = claims.witnesses.get("3")
    if w3 is not None:
        if w3.route == "a":
            D.add(Fraction(0))
            S |= {-w3.zeta, Fraction(0), w3.zeta}
        else:
            S |= {w3.x, -w3.s, Fraction(0), w3.s}
            D.add(w3.x)
    # only values of the format can be looked up; a witness that is not one fails in Coq (is_value_b)
    S = {q for q in S if fmt.contains(q)}
    D = {q for q in D if fmt.contains(q)}
    return S, D


def _witness_terms(claims: Claims) -> list[str]:
    out = []
    w1 = claims.witnesses.get("1")
    if isinstance(w1, Witness1):
        out.append("Definition witness_1 : witness1 := {|\n"
                   f"  w1_z_d := {term(w1.z_dead)}; w1_L := {term(w1.L)};\n"
                   f"  w1_live := {term(w1.live)}; w1_sigma_live := {term(w1.sigma_live)};\n"
                   f"  w1_constant := {term(w1.constant)}; w1_sigma_constant := {term(w1.sigma_constant)};\n"
                   f"  w1_zero := {term(w1.zero)};\n"
                   f"  w1_pass := {term(w1.pass_state)}; w1_dsigma_pass := {term(w1.dsigma_pass)} |}}.\n")
    w2 = claims.witnesses.get("2")
    if isinstance(w2, Witness2):
        note = " (* the certificate: eta_0 unbounded, sigma~'(delta_0) = 0; stated with eta_0 = 1 *)" \
            if w2.eta_0_unbounded else ""
        out.append("Definition witness_2 : witness2 := {|\n"
                   f"  w2_delta_0 := {term(w2.delta_0)}; w2_delta_1 := {term(w2.delta_1)};\n"
                   f"  w2_sigma_0 := {term(w2.sigma_0)}; w2_sigma_1 := {term(w2.sigma_1)};\n"
                   f"  w2_dsigma_0 := {term(w2.dsigma_0)}; w2_dsigma_1 := {term(w2.dsigma_1)};\n"
                   f"  w2_eta_0 := ({w2.eta_0}); w2_eta_1 := ({w2.eta_1}); w2_eta_2 := ({w2.eta_2});"
                   f" w2_k := ({w2.k}) |}}.{note}\n")
    w3 = claims.witnesses.get("3")
    if isinstance(w3, Witness3):
        out.append(f"(* Condition 3, route ({w3.route}) *)\n"
                   "Definition witness_3 : witness3 := {|\n"
                   f"  w3_zeta := {term(w3.zeta)}; w3_x := {term(w3.x if w3.x is not None else 0)};"
                   f" w3_s := {term(w3.s)};\n"
                   f"  w3_dsigma_at := {term(w3.dsigma_at)};\n"
                   f"  w3_sigma_minus_s := {term(w3.sigma_minus_s)}; w3_sigma_0 := {term(w3.sigma_0)};"
                   f" w3_sigma_s := {term(w3.sigma_s)} |}}.\n")
    return out


def data_file(claims: Claims) -> str:
    return "\n".join([
        f"(** Data of the certificate: {claims.activation} on {claims.format.name} ({claims.implementation} "
        f"implementation), written by condcheck {__version__}. *)",
        "From Coq Require Import ZArith Reals List.",
        "From Flocq Require Import Core.",
        "From Condcheck Require Import Format Dyadic Activations Condition1 Condition2 Condition3.",
        "Open Scope R_scope.", "",
        format_definition(claims.format), *_witness_terms(claims)])


def statement_parts(claims: Claims) -> list[str]:
    """The conjuncts of ``certificate_holds``: each condition (or its negation), and the witness claims."""
    F, A = coq_name(claims.format), recipe_for(claims.activation).record
    out = []
    for k in ("1", "2", "3"):
        if claims.holds[k]:
            w = claims.witnesses[k]
            at = f"Condition3{w.route}_at" if k == "3" else f"Condition{k}_at"
            out.append(f"(Condition{k} {F} {A} /\\ {at} {F} {A} witness_{k})")
        else:
            out.append(f"~ Condition{k} {F} {A}")
    return out


def main_file(claims: Claims, fmt_coq: str, record: str) -> str:
    F, A = fmt_coq, record
    args = f"{F} {F}_wf {A} sigma_facts dsigma_facts sigma_facts_ok dsigma_facts_ok"
    statement, asserts, parts = statement_parts(claims), [], []
    for k in ("1", "2", "3"):
        if claims.holds[k]:
            w = claims.witnesses[k]
            at = f"Condition3{w.route}_at" if k == "3" else f"Condition{k}_at"
            check = f"check3{w.route}_sound" if k == "3" else f"check{k}_sound"
            asserts.append(f"assert (H{k} : {at} {F} {A} witness_{k})\n"
                           f"  by (apply ({check} {args}); vm_cast_no_check (eq_refl true)).")
            parts.append(f"split; [exact ({at}_holds _ _ _ H{k}) | exact H{k}]")
        else:
            asserts.append(f"assert (H{k} : ~ Condition{k} {F} {A})\n"
                           f"  by (apply (refute{k}_sound {args}); vm_cast_no_check (eq_refl true)).")
            parts.append(f"exact H{k}")
    verdicts = ", ".join(f"Condition {k} {'holds' if claims.holds[k] else 'fails'}" for k in ("1", "2", "3"))
    proof = "\n".join(asserts) + "\n" + "split; [" + parts[0] + "|].\nsplit; [" + parts[1] + "|].\n" + parts[2] + ".\n"
    return "\n".join([
        f"(** What the certificate of {claims.activation} on {claims.format.name} "
        f"({claims.implementation} implementation) says: {verdicts}. *)",
        "From Coq Require Import ZArith Reals List.",
        "From Flocq Require Import Core.",
        "From Condcheck Require Import Format Dyadic Activations Rounded Decide.",
        "From Condcheck Require Import Condition1 Condition2 Condition3 Check1 Check2 Check3.",
        "From Cert Require Import Data Facts.", "",
        "Theorem certificate_holds :\n  " + " /\\\n  ".join(statement) + ".",
        "Proof.", proof + "Qed.", ""])


def write_development(claims: Claims, out, *, progress=None) -> dict:
    """Write the development proving ``claims`` into directory ``out``; returns a summary."""
    fmt = claims.format
    check_supported(claims)
    recipe = recipe_for(claims.activation)
    out = Path(out)
    S, D = plan(claims)
    maker = FactMaker(claims.activation, fmt, coq_name(fmt), f"{coq_name(fmt)}_wf")
    facts = {"s": [maker.point(False, q) for q in sorted(S)], "d": [maker.point(True, q) for q in sorted(D)]}
    out.mkdir(parents=True, exist_ok=True)
    files = library.copy_into(out, with_erf=maker.uses_erf_bounds)
    generated = ["Data.v"] + write_facts(out, facts, coq_name(fmt), recipe.record) + ["Main.v"]
    library.write_if_changed(out / "Data.v", data_file(claims))
    library.write_if_changed(out / "Main.v", main_file(claims, coq_name(fmt), recipe.record))
    library.write_if_changed(out / "_CoqProject", library.coq_project(files, generated))
    return {"directory": str(out), "facts_sigma": len(facts["s"]), "facts_dsigma": len(facts["d"]),
            "files": files + generated, "statement": " /\\ ".join(statement_parts(claims))}
