"""``prove --network``: a Coq development proving a network file's claim (SPEC 6) on a small format.

The development states ``claim_holds F A net claim`` (``coq/Network.v``): at every point of the claim,
the network's value in paper order is f*(x) and its AD gradient D_(f,x)(y) is g*(x, y) for every y
listed (one for Theorem 5, every y covered for Theorem 7), with no overflow anywhere.  The network and
the claim are data (``Data.v``); sigma~ and sigma~' are facts proved once per pre-activation value that
the claim's points reach (``Facts_*.v``, as for certificates); Coq computes every value and gradient on
exact dyadic numbers (``vm_compute``) with the computable rounding proved equal to Flocq's.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Optional

import numpy as np

from condcheck.errors import CondcheckError

from . import library
from .api import ProofResult, prepare_out
from .development import check_format, coq_name, format_definition
from .dyadic import term
from .facts import FactMaker, write_facts
from .recipes import recipe_for
from .record import save_record


def _load(network):
    from condcheck.netfile import load_network
    if isinstance(network, (str, Path)):
        return load_network(network)
    return network


def pre_activations(net, points: np.ndarray) -> set:
    """Every pre-activation value of a hidden layer at the given inputs (exact, as Fractions)."""
    from condcheck.interpreters import get_interpreter
    from condcheck.ops import working_dtype
    from condcheck.rounded_activation import get_rounded
    fmt = net.format
    dt = working_dtype(fmt)
    rounded = get_rounded(net.activation, fmt, net.implementation)
    v = np.asarray(points, dtype=np.float64).astype(dt)
    dense = get_interpreter("dense")
    out = set()
    for l, layer in enumerate(net.layers, 1):
        if l == len(net.layers):
            break
        z = dense.forward_sums(layer, v, fmt)
        if not np.isfinite(z).all():
            raise CondcheckError(f"the network overflows in layer {l} at a point of its claim; its claim is false")
        out.update(Fraction(float(q)) for q in np.unique(z))
        vals, over = rounded.value_array(z)
        if over.any():
            raise CondcheckError(f"sigma~ overflows in layer {l} at a point of the claim; its claim is false")
        v = np.asarray(vals, dtype=np.float64).astype(dt)
    return out


def balanced_order(items: list) -> list:
    """A preorder of the balanced search tree over sorted ``items`` (inserting in this order keeps the
    Coq library's fact tree balanced)."""
    out, stack = [], [(0, len(items))]
    while stack:
        lo, hi = stack.pop()
        if lo >= hi:
            continue
        mid = (lo + hi) // 2
        out.append(items[mid])
        stack.append((mid + 1, hi))
        stack.append((lo, mid))
    return out


def _layer_term(layer) -> str:
    w = layer.weight.tocsr()
    rows = []
    for i in range(w.shape[0]):
        start, end = w.indptr[i], w.indptr[i + 1]
        cols = w.indices[start:end]
        order = np.argsort(cols, kind="stable")
        entries = [f"({int(cols[k]) + 1}%positive, {term(Fraction(float(w.data[start + k])))})" for k in order
                   if w.data[start + k] != 0]
        rows.append("[" + "; ".join(entries) + "]")
    bias = "[" + "; ".join(term(Fraction(float(b))) for b in layer.bias) + "]"
    return f"Layer {w.shape[1]} [\n    " + ";\n    ".join(rows) + "]\n  " + bias


def _case_term(x, value, grads) -> str:
    xs = "[" + "; ".join(term(Fraction(float(c))) for c in x) + "]"
    gs = "; ".join(f"({term(Fraction(float(y)))}, [" + "; ".join(term(Fraction(float(c))) for c in g) + "])"
                   for y, g in grads)
    return f"Case {xs} {term(Fraction(float(value)))} [{gs}]"


def data_file(fmt) -> str:
    return "\n".join(["From Coq Require Import ZArith Reals.", "From Flocq Require Import Core.",
                      "From Condcheck Require Import Format.", "Open Scope R_scope.", "", format_definition(fmt)])


def claim_file(net, claim) -> str:
    """Claim.v: the network and its claim, as data (apart from Data.v, which the facts depend on)."""
    fmt = net.format
    layers = ";\n  ".join(_layer_term(L) for L in net.layers)
    cases = []
    for n, x in enumerate(claim.points):
        if claim.theorem == 5:
            grads = [(claim.upstream[n], claim.gradients[n])]
        else:
            grads = [(y, claim.gradients[n, k]) for k, y in enumerate(claim.upstream)]
        cases.append(_case_term(x, claim.values[n], grads))
    return "\n".join([
        f"(** A Theorem {claim.theorem} network for {net.activation} on {fmt.name}: depth {len(net.layers)}, "
        f"widths {[net.input_dim] + [L.weight.shape[0] for L in net.layers]}, "
        f"{sum(int((L.weight != 0).sum()) for L in net.layers)} nonzero weights; its claim at {len(cases)} points. *)",
        "From Coq Require Import ZArith Reals List.", "From Flocq Require Import Core.",
        "From Condcheck Require Import Format Dyadic Network.", "Import ListNotations.", "",
        "Definition net : network := [\n  " + layers + "].\n",
        "Definition claim : list case := [\n  " + ";\n  ".join(cases) + "].\n"])


def main_file(net, claim, fmt_coq: str, record: str) -> str:
    what = "D_(f,x)(h*(x))" if claim.theorem == 5 else "D_(f,x)(y) for every y listed"
    return "\n".join([
        f"(** The claim of the network: at every listed point x, f(x) = f*(x) and {what} = g*, in the paper's "
        f"order, with no overflow (condcheck's finite semantics). *)",
        "From Coq Require Import ZArith Reals List.", "From Flocq Require Import Core.",
        "From Condcheck Require Import Format Dyadic Activations Rounded Network.",
        "From Cert Require Import Data Facts Claim.", "",
        f"Theorem certificate_holds : claim_holds {fmt_coq} {record} net claim.",
        "Proof.",
        f"apply (check_claim_sound {fmt_coq} {fmt_coq}_wf {record} sigma_facts dsigma_facts sigma_facts_ok "
        f"dsigma_facts_ok).",
        "(* the check is computed once, by the kernel at Qed (vm_compute here would compute it twice) *)",
        "vm_cast_no_check (eq_refl true).", "Qed.", ""])


def write_network_development(net, claim, out) -> dict:
    fmt = net.format
    check_format(fmt, wide=False)
    recipe = recipe_for(net.activation)
    if net.implementation != "exact":
        raise CondcheckError(f"Coq proofs cover the correctly rounded ('exact') implementation, not "
                             f"{net.implementation!r}")
    if net.semantics != "finite":
        raise CondcheckError("Coq proofs of networks cover the finite semantics (no Inf or NaN anywhere), not "
                             f"{net.semantics!r}")
    if claim is None:
        raise CondcheckError("the network file has no claim: there is nothing to prove")
    zs = sorted(pre_activations(net, claim.points))
    maker = FactMaker(net.activation, fmt, coq_name(fmt), f"{coq_name(fmt)}_wf")
    order = balanced_order(zs)
    facts = {"s": [maker.point(False, q) for q in order], "d": [maker.point(True, q) for q in order]}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = library.copy_into(out, with_network=True, with_erf=maker.uses_erf_bounds)
    generated = ["Data.v"] + write_facts(out, facts, coq_name(fmt), recipe.record) + ["Claim.v", "Main.v"]
    library.write_if_changed(out / "Data.v", data_file(fmt))
    library.write_if_changed(out / "Claim.v", claim_file(net, claim))
    library.write_if_changed(out / "Main.v", main_file(net, claim, coq_name(fmt), recipe.record))
    library.write_if_changed(out / "_CoqProject", library.coq_project(files, generated))
    return {"facts_sigma": len(facts["s"]), "facts_dsigma": len(facts["d"]),
            "statement": f"claim_holds {coq_name(fmt)} {recipe.record} net claim"}


def prove_network(network, out, *, run: bool = True, jobs: Optional[int] = None, quiet: bool = False) -> ProofResult:
    """Write (and with ``run``, check with Coq) the development proving a network file's claim."""
    from .coqrun import check_development, development_hash
    net, claim = _load(network)
    check_format(net.format, wide=False)
    recipe_for(net.activation)
    d = prepare_out(out)
    summary = write_network_development(net, claim, d)
    result = ProofResult(str(d), net.activation, net.format.name, summary["statement"],
                         {"sigma": summary["facts_sigma"], "dsigma": summary["facts_dsigma"]}, development_hash(d))
    if run:
        result.coq = check_development(d, jobs=jobs, quiet=quiet).to_dict()
    save_record(result)
    return result
