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

On a wide format (more than :data:`MAX_BITS` bits) only the witness points have facts; the dead tail is
a chain of interval facts (``Facts_tail.v``, :mod:`condcheck.proofs.tail`), and what is out of reach
(GELU's tail and far values, a failing condition) is a named premise of the theorem (``Hypotheses.v``).
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
from .facts import FactMaker, hypothesis_names, write_facts
from .recipes import recipe_for

#: formats whose every value is enumerated inside Coq; wider ones ("wide formats", up to
#: :data:`MAX_WIDE_BITS`) are proved at the witnesses, with the dead tail from a chain of interval facts
MAX_BITS = 8
MAX_WIDE_BITS = 64


def coq_name(fmt: Format) -> str:
    return fmt.name


def format_definition(fmt: Format) -> str:
    """The Coq definition of a format and its well-formedness lemma."""
    name = coq_name(fmt)
    return (f"(** {fmt.name}: M = {fmt.M} fraction bits, e_min = {fmt.e_min}, e_max = {fmt.e_max}, "
            f"Omega = {real_text(fmt.max)} *)\n"
            f"Definition {name} : format := Format ({fmt.M}) ({fmt.e_min}) ({fmt.e_max}) {term(fmt.max)}.\n"
            f"Lemma {name}_wf : wf_format {name} = true.\nProof. vm_compute. reflexivity. Qed.\n")


def is_wide(fmt: Format) -> bool:
    """A format too large to enumerate inside Coq."""
    return fmt.bits > MAX_BITS


def check_format(fmt: Format, wide: bool = True) -> None:
    """Formats the proofs cover: at most :data:`MAX_WIDE_BITS` bits, or :data:`MAX_BITS` without ``wide``
    (networks) (a one-line error otherwise)."""
    if not wide and fmt.bits > MAX_BITS:
        raise CondcheckError(f"format {fmt.name} has {fmt.bits} bits; Coq proofs of networks cover formats of at "
                             f"most {MAX_BITS} bits")
    if fmt.bits > MAX_WIDE_BITS:
        raise CondcheckError(f"format {fmt.name} has {fmt.bits} bits; Coq proofs cover formats of at most "
                             f"{MAX_WIDE_BITS} bits")


def check_supported(claims: Claims) -> None:
    """Refuse, with a one-line error, what the proofs do not cover (before any long work)."""
    check_format(claims.format)
    recipe_for(claims.activation)
    if claims.implementation != "exact":
        raise CondcheckError(f"Coq proofs cover the correctly rounded ('exact') implementation, not "
                             f"{claims.implementation!r}")


def plan(claims: Claims, tail_proved: bool = False) -> tuple[set, set]:
    """The points where facts about sigma (first set) and sigma' (second set) are needed.  On a wide
    format only the witness points, and with ``tail_proved`` (the dead tail's chains are facts too) not
    those at or below z_d."""
    fmt = claims.format
    wide = is_wide(fmt)
    S, D = set(), set()
    if not all(claims.holds.values()) and not wide:
        every = set(fmt.fractions())
        S |= every
        D |= every
    w1 = claims.witnesses.get("1")
    if w1 is not None:
        tail = set() if wide else {q for q in fmt.fractions() if q <= w1.z_dead}
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
    if tail_proved:
        S = {q for q in S if q > w1.z_dead}
        D = {q for q in D if q > w1.z_dead}
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


def main_file(claims: Claims, fmt_coq: str, record: str, hypotheses: list = (), dead: str = "enum",
              fact_hyps: tuple = ((), ())) -> str:
    """Main.v.  ``dead``: how Condition 1's dead tail is proved: "enum" (every value below z_d, by
    computation), "cover" (the chains of Facts_tail.v) or "hypothesis" (H_dead_tail).  ``hypotheses``
    are the premises of the theorem; ``fact_hyps`` those that sigma_facts_ok / dsigma_facts_ok take."""
    F, A = fmt_coq, record
    hs = "".join(" h" + h[1:] for h in fact_hyps[0])
    hd = "".join(" h" + h[1:] for h in fact_hyps[1])
    fs_ok = f"(sigma_facts_ok{hs})" if hs else "sigma_facts_ok"
    fd_ok = f"(dsigma_facts_ok{hd})" if hd else "dsigma_facts_ok"
    args = f"{F} {F}_wf {A} sigma_facts dsigma_facts {fs_ok} {fd_ok}"
    statement, asserts, parts = statement_parts(claims), [], []
    for k in ("1", "2", "3"):
        if claims.holds[k]:
            w = claims.witnesses[k]
            at = f"Condition3{w.route}_at" if k == "3" else f"Condition{k}_at"
            if k == "1" and dead == "cover":
                asserts.append(
                    f"assert (H1 : {at} {F} {A} witness_1)\n"
                    f"  by (apply (check1_with_sound {args}\n"
                    f"        (dead_cover {F} (w1_z_d witness_1) (w1_L witness_1) sigma_tail dsigma_tail));\n"
                    f"      [intros Hd; exact (dead_cover_sound {F} {A} _ _ _ _ sigma_tail_ok dsigma_tail_ok Hd)\n"
                    f"      |vm_cast_no_check (eq_refl true)]).")
            elif k == "1" and dead == "hypothesis":
                asserts.append(
                    f"assert (H1 : {at} {F} {A} witness_1)\n"
                    f"  by (apply (check1_with_sound {args} true);\n"
                    f"      [intros _; exact h_dead_tail|vm_cast_no_check (eq_refl true)]).")
            else:
                check = f"check3{w.route}_sound" if k == "3" else f"check{k}_sound"
                asserts.append(f"assert (H{k} : {at} {F} {A} witness_{k})\n"
                               f"  by (apply ({check} {args}); vm_cast_no_check (eq_refl true)).")
            parts.append(f"split; [exact ({at}_holds _ _ _ H{k}) | exact H{k}]")
        elif is_wide(claims.format):
            asserts.append(f"assert (H{k} : ~ Condition{k} {F} {A}) by exact h_not_condition_{k}.")
            parts.append(f"exact H{k}")
        else:
            asserts.append(f"assert (H{k} : ~ Condition{k} {F} {A})\n"
                           f"  by (apply (refute{k}_sound {args}); vm_cast_no_check (eq_refl true)).")
            parts.append(f"exact H{k}")
    verdicts = ", ".join(f"Condition {k} {'holds' if claims.holds[k] else 'fails'}" for k in ("1", "2", "3"))
    intro = ("intros " + " ".join("h" + h["name"][1:] for h in hypotheses) + ".\n") if hypotheses else ""
    proof = intro + "\n".join(asserts) + "\n" + "split; [" + parts[0] + "|].\nsplit; [" + parts[1] + "|].\n" + \
        parts[2] + ".\n"
    premises = "".join(f"{h['name']} ->\n  " for h in hypotheses)
    under = (" Under the hypotheses of Hypotheses.v (" + ", ".join(h["name"] for h in hypotheses) + ").") \
        if hypotheses else ""
    return "\n".join([
        f"(** What the certificate of {claims.activation} on {claims.format.name} "
        f"({claims.implementation} implementation) says: {verdicts}.{under} *)",
        "From Coq Require Import ZArith Reals List.",
        "From Flocq Require Import Core.",
        "From Condcheck Require Import Format Dyadic Activations Rounded Decide.",
        "From Condcheck Require Import Condition1 Condition2 Condition3 Check1 Check2 Check3.",
        *(["From Condcheck Require Import Cover.", "From Cert Require Import Facts_tail."] if dead == "cover" else []),
        *(["From Cert Require Import Hypotheses."] if hypotheses else []),
        "From Cert Require Import Data Facts.", "",
        "Theorem certificate_holds :\n  " + premises + " /\\\n  ".join(statement) + ".",
        "Proof.", proof + "Qed.", ""])


def hypotheses_file(claims: Claims, hypotheses: list) -> str:
    """Hypotheses.v: each premise of ``certificate_holds``, a named Prop with what it says."""
    out = [f"(** What the development of {claims.activation} on {claims.format.name} does not prove: the premises "
           f"of certificate_holds. *)",
           "From Coq Require Import ZArith Reals List.", "From Flocq Require Import Core.",
           "From Condcheck Require Import Format Dyadic Activations Rounded Condition1 Condition2 Condition3.",
           "From Cert Require Import Data.", "Open Scope R_scope.", ""]
    for h in hypotheses:
        out.append(f"(** {h['meaning']} *)\nDefinition {h['name']} : Prop :=\n  {h['coq']}.\n")
    return "\n".join(out)


def _wide_tail(claims: Claims, maker: FactMaker, fmt_c: str, record: str):
    """(sigma chain, sigma' chain) of the dead tail, or None when it is a hypothesis (GELU)."""
    from .facts import Fact
    from .tail import TAIL_FORMS, piece_proof, pieces
    w1 = claims.witnesses.get("1")
    act, fmt = claims.activation, claims.format
    if w1 is None or (act not in TAIL_FORMS and act != "relu"):
        return None
    cover = w1.tail_cover or _symbolic_cover(claims)
    chain = pieces(act, fmt, cover, w1.z_dead, w1.L)
    out = []
    for derivative, v, tag in ((False, w1.L, "ts"), (True, Fraction(0), "td")):
        out.append([Fact(f"{tag}_{i}", derivative, p.lo, p.hi, v,
                         piece_proof(act, fmt_c, f"{fmt_c}_wf", p, derivative, v, fmt)) for i, p in enumerate(chain)])
    return tuple(out)


def _symbolic_cover(claims: Claims) -> tuple:
    """The certified checker's cover of the dead tail, for a certificate without one (exhaustive method):
    the symbolic method's certificate of the same pair."""
    from condcheck.check import check_activation
    from .certificate import read_claims
    own = read_claims(check_activation(claims.activation, claims.format, claims.implementation,
                                       method="symbolic").to_certificate())
    w1 = own.witnesses.get("1")
    if w1 is None or not w1.tail_cover:
        raise CondcheckError(f"{claims.activation} on {claims.format.name}: the symbolic method gives no cover of "
                             f"the dead tail")
    return w1.tail_cover


def write_development(claims: Claims, out, *, progress=None) -> dict:
    """Write the development proving ``claims`` into directory ``out``; returns a summary."""
    fmt = claims.format
    check_supported(claims)
    recipe = recipe_for(claims.activation)
    out = Path(out)
    wide = is_wide(fmt)
    F = coq_name(fmt)
    maker = FactMaker(claims.activation, fmt, F, f"{F}_wf", wide=wide)
    tail = _wide_tail(claims, maker, F, recipe.record) if wide else None
    S, D = plan(claims, tail_proved=tail is not None)
    w1 = claims.witnesses.get("1")
    # GELU on a wide format: values in the tail are read from the premise H_dead_tail
    in_dead = (lambda q: q <= w1.z_dead) if wide and tail is None and w1 is not None else (lambda q: False)
    facts = {"s": [maker.point(False, q, in_dead(q)) for q in sorted(S)],
             "d": [maker.point(True, q, in_dead(q)) for q in sorted(D)]}
    hypotheses = []
    for key, fn in (("s", "sigma"), ("d", "dsigma")):
        for f in facts[key]:
            if f.proof is None:
                hypotheses.append({"name": f.hypothesis, "coq": f"fact_holds {F} ({fn} {recipe.record}) {f.coq_fact()}",
                                   "meaning": f.why})
    fact_hyps = tuple(hypothesis_names(facts[k]) for k in ("s", "d"))
    dead = "enum"
    if wide and "1" in claims.witnesses:
        dead = "cover" if tail is not None else "hypothesis"
    if dead == "hypothesis":
        hypotheses.append({
            "name": "H_dead_tail",
            "coq": (f"forall z, in_format {F} z -> z <= F2R (w1_z_d witness_1) ->\n"
                    f"    sigma_tilde {F} {recipe.record} z = F2R (w1_L witness_1) /\\ "
                    f"dsigma_tilde {F} {recipe.record} z = 0"),
            "meaning": (f"Condition 1 (a), the dead tail: sigma~(z) = L and sigma~'(z) = 0 at every value z <= z_d of "
                        f"{fmt.name}; {claims.activation}'s tail needs erf within 2^{fmt.e_min - fmt.M - 1} of -1, "
                        f"which no bound proved here reaches (condcheck's certified checker proved it in Python)")})
    for k in ("1", "2", "3"):
        if wide and not claims.holds[k]:
            hypotheses.append({"name": f"H_not_condition_{k}", "coq": f"~ Condition{k} {F} {recipe.record}",
                               "meaning": f"Condition {k} fails: a statement over every value of {fmt.name}, not "
                                          f"enumerated inside Coq above {MAX_BITS} bits (condcheck's Python verdict)"})
    out.mkdir(parents=True, exist_ok=True)
    files = library.copy_into(out, with_erf=maker.uses_erf_bounds, with_cover=wide)
    generated = ["Data.v"] + (["Hypotheses.v"] if hypotheses else []) + \
        write_facts(out, facts, F, recipe.record, tail=tail) + ["Main.v"]
    library.write_if_changed(out / "Data.v", data_file(claims))
    if hypotheses:
        library.write_if_changed(out / "Hypotheses.v", hypotheses_file(claims, hypotheses))
    elif (out / "Hypotheses.v").exists():
        (out / "Hypotheses.v").unlink()
    library.write_if_changed(out / "Main.v", main_file(claims, F, recipe.record, hypotheses, dead, fact_hyps))
    library.write_if_changed(out / "_CoqProject", library.coq_project(files, generated))
    statement = " /\\ ".join(statement_parts(claims))
    if hypotheses:
        statement = " -> ".join(h["name"] for h in hypotheses) + " -> " + statement
    n_tail = len(tail[0]) if tail else 0
    return {"directory": str(out), "facts_sigma": len(facts["s"]) + n_tail, "facts_dsigma": len(facts["d"]) + n_tail,
            "tail_pieces": n_tail, "files": files + generated, "statement": statement,
            "hypotheses": [{"name": h["name"], "statement": h["coq"], "meaning": h["meaning"]} for h in hypotheses]}
