"""condcheck prove on wide formats (bfloat16, float16, float32, float64): witness facts, the dead tail from a
chain of interval facts (condcheck/proofs/tail.py, coq/Cover.v), and what is out of reach carried as named
premises of certificate_holds (Hypotheses.v).

The tests that run Coq are marked slow (each development compiles the library and Interval's tactics,
some 40 s of CPU); the others check what is written.
"""
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from condcheck.check import check_activation
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.proofs import coqrun
from condcheck.proofs.api import prove_certificate
from condcheck.proofs.certificate import read_claims
from condcheck.proofs.coqrun import development_hash
from condcheck.proofs.development import write_development
from condcheck.proofs.record import RECORD, kernel_note
from condcheck.proofs.tail import TAIL_FORMS, Piece, piece_ok, pieces, rounding_bounds

needs_coq = pytest.mark.skipif(not coqrun.coq_available(), reason="coqc / coq_makefile not on PATH")

#: what Print Assumptions may list (as in tests/test_proofs.py)
REAL_AXIOM_MODULES = {"ClassicalDedekindReals", "FunctionalExtensionality", "Classical_Prop"}


def _cert(act, fmt):
    return check_activation(act, fmt, method="symbolic").to_certificate()


# ---- without Coq ------------------------------------------------------------------------------------------
def test_the_dead_tail_chain_runs_from_minus_omega_to_z_d_without_a_gap():
    c = read_claims(_cert("tanh", "float32"))
    w1 = c.witnesses["1"]
    chain = pieces("tanh", c.format, w1.tail_cover, w1.z_dead, w1.L)
    assert chain[0].lo == -c.format.max and chain[-1].hi == w1.z_dead
    assert all(p.hi == q.lo for p, q in zip(chain, chain[1:]))


def test_a_piece_reaching_past_z_d_is_not_bounded():
    fmt = get_format("float16")
    w1 = read_claims(_cert("tanh", "float16")).witnesses["1"]
    targets = (rounding_bounds(w1.L, fmt), rounding_bounds(Fraction(0), fmt))
    last = pieces("tanh", fmt, w1.tail_cover, w1.z_dead, w1.L)[-1]
    past = fmt.next_up(w1.z_dead)
    assert piece_ok(TAIL_FORMS["tanh"], last.lo, w1.z_dead, last.bound, targets, last.prec)
    wider = Piece(last.lo, past, last.bound, last.prec)
    from condcheck.proofs.tail import exp_bound
    assert not piece_ok(TAIL_FORMS["tanh"], wider.lo, wider.hi, exp_bound(2, past, 256, fmt), targets, 256)


def test_a_certificate_without_a_tail_cover_gets_its_chain_from_the_symbolic_method(tmp_path):
    cert = check_activation("tanh", "bfloat16", method="exhaustive").to_certificate()
    assert "tail_cover" not in cert["conditions"]["1"]["witness"]
    s = write_development(read_claims(cert), tmp_path)
    assert s["tail_pieces"] >= 1 and s["hypotheses"] == []


def test_tanh_on_a_wide_format_is_stated_without_premises(tmp_path):
    s = write_development(read_claims(_cert("tanh", "float32")), tmp_path)
    assert s["hypotheses"] == [] and not (tmp_path / "Hypotheses.v").exists()
    assert s["tail_pieces"] >= 1 and "dead_cover" in (tmp_path / "Main.v").read_text()


def test_gelu_on_a_wide_format_states_its_dead_tail_as_a_named_premise(tmp_path):
    s = write_development(read_claims(_cert("gelu", "float16")), tmp_path)
    names = [h["name"] for h in s["hypotheses"]]
    assert "H_dead_tail" in names
    main = (tmp_path / "Main.v").read_text()
    theorem = main[main.index("Theorem certificate_holds"):main.index("Proof.")]
    assert all(f"{n} ->" in theorem for n in names)
    hyps = (tmp_path / "Hypotheses.v").read_text()
    assert all(f"Definition {n} : Prop :=" in hyps for n in names)
    text = "".join(p.read_text() for p in tmp_path.rglob("*.v"))
    assert not re.search(r"\b(Axiom|Parameter|Admitted|admit)\b", text)


def test_prove_refuses_a_false_wide_certificate_before_writing(tmp_path):
    cert = _cert("tanh", "float16")
    cert["conditions"]["1"]["witness"]["sigma(live)"] = dict(cert["conditions"]["1"]["witness"]["sigma(live)"],
                                                             fraction="-1", hex="-0x1.0p+0")
    with pytest.raises(CondcheckError, match="is false, no proof written"):
        prove_certificate(cert, tmp_path / "dev", run=False)
    assert not (tmp_path / "dev").exists()


def test_networks_on_a_wide_format_are_refused_with_a_one_line_error():
    from condcheck.proofs.development import check_format
    with pytest.raises(CondcheckError, match="networks cover formats of at most 8 bits"):
        check_format(get_format("float16"), wide=False)


def test_the_report_line_of_a_proof_with_premises_says_under_which_hypotheses(tmp_path):
    r = prove_certificate(_cert("gelu", "float16"), tmp_path, run=False)
    rec = json.loads((tmp_path / RECORD).read_text())
    rec["coq"] = {"ok": True, "versions": {"coq": "8.16.1", "flocq": "4.1.0"}}
    rec["development_sha256"] = development_hash(tmp_path)
    (tmp_path / RECORD).write_text(json.dumps(rec))
    note, _ = kernel_note(tmp_path, "gelu", "float16", r.verdicts)
    assert note.startswith("kernel-checked by Coq 8.16.1, Flocq 4.1.0 under the hypotheses ")
    assert "H_dead_tail" in note


# ---- with Coq (slow) --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tanh_float16(tmp_path_factory):
    d = tmp_path_factory.mktemp("wide") / "dev"
    return prove_certificate(_cert("tanh", "float16"), d, quiet=True, jobs=1)


def _seeded(src: Path, directory: Path) -> Path:
    """``directory`` with the compiled library of the development ``src`` (compiled once)."""
    shutil.copytree(Path(src) / "lib", Path(directory) / "lib")
    return directory


@pytest.mark.slow
@needs_coq
def test_coq_accepts_tanh_on_float16_with_no_premise_and_only_the_axioms_of_the_reals(tanh_float16):
    assert tanh_float16.ok, tanh_float16.coq.get("log", "")[-3000:]
    assert tanh_float16.hypotheses == [] and "->" not in tanh_float16.statement
    names = tanh_float16.coq["assumptions"]
    assert names and {n.split(".")[0] for n in names} <= REAL_AXIOM_MODULES


@pytest.mark.slow
@needs_coq
def test_coq_accepts_gelu_on_float16_under_its_premises_which_are_no_axioms(tanh_float16, tmp_path):
    r = prove_certificate(_cert("gelu", "float16"), _seeded(tanh_float16.directory, tmp_path / "dev"), quiet=True,
                          jobs=1)
    assert r.ok, r.coq.get("log", "")[-3000:]
    assert "H_dead_tail" in [h["name"] for h in r.hypotheses]
    assert {n.split(".")[0] for n in r.coq["assumptions"]} <= REAL_AXIOM_MODULES


@pytest.mark.slow
@needs_coq
def test_coq_rejects_a_false_wide_certificate_written_without_the_precheck(tanh_float16, tmp_path):
    cert = _cert("tanh", "float16")
    w = cert["conditions"]["1"]["witness"]
    w["sigma(live)"] = dict(w["sigma(live)"], fraction="-1", hex="-0x1.0p+0")
    r = prove_certificate(cert, _seeded(tanh_float16.directory, tmp_path / "dev"), precheck_first=False, quiet=True,
                          jobs=1)
    assert r.ok is False
    assert r.coq["files"]["Facts.vo"]["built"] and not r.coq["files"]["Main.vo"]["built"]


@pytest.mark.slow
@needs_coq
def test_coq_rejects_a_dead_tail_piece_widened_past_z_d(tanh_float16, tmp_path):
    d = tmp_path / "dev"
    shutil.copytree(tanh_float16.directory, d)
    fmt = get_format("float16")
    w1 = read_claims(_cert("tanh", "float16")).witnesses["1"]
    from condcheck.proofs.dyadic import term
    tail = d / "Facts_tail.v"
    tail.write_text(tail.read_text().replace(term(w1.z_dead), term(fmt.next_up(fmt.next_up(w1.z_dead)))))
    (d / "Facts_tail.vo").unlink()              # copied from the accepted development
    r = coqrun.check_development(d, quiet=True)
    assert not r.ok and not r.files["Facts_tail.vo"]["built"]
