"""condcheck prove: Coq developments of certificates (condcheck/proofs/).

Tests that run Coq are skipped, with the reason, when coqc is not on PATH.  The default suite compiles a
representative set (the three negations of sigmoid on float4_e2m1fn, every clause of ReLU on
float8_e4m3, a false certificate, an admitted lemma, a small Theorem 5 network and a false network claim;
the library is compiled once per run, and each development once, whatever the number of xdist workers);
tests/test_proofs_slow.py proves every paper activation on every format of at most 8 bits and the
networks (-m slow).
"""
import fcntl
import json
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import mpmath
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from condcheck.activations import get_activation, x as X
from condcheck.check import check_activation
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.proofs import coqrun, library
from condcheck.proofs.api import ProofResult, precheck, prove, prove_certificate
from condcheck.proofs.certificate import read_claims
from condcheck.proofs.development import plan, write_development
from condcheck.proofs.dyadic import bracket, parts, term
from condcheck.proofs.recipes import RECIPES, ZERO_VALUES
from condcheck.rounding import round_fraction

needs_coq = pytest.mark.skipif(not coqrun.coq_available(), reason="coqc / coq_makefile not on PATH")


def _cert(act, fmt):
    return check_activation(act, fmt).to_certificate()


# ---- without Coq ------------------------------------------------------------------------------------------
def test_the_exact_values_at_zero_are_sympys_values_of_condchecks_expressions():
    for (name, derivative), value in ZERO_VALUES.items():
        act = get_activation(name)
        expr = act.derivative if derivative else act.expr
        assert sympy.nsimplify(expr.subs(X, 0)) == sympy.Rational(value.numerator, value.denominator)


def test_the_exact_values_on_linear_branches_are_sympys_values():
    for name in ("relu", "elu"):
        act = get_activation(name)
        for z in (Fraction(3, 4), Fraction(-5, 2), Fraction(0)):
            for derivative in (False, True):
                exact = RECIPES[name].exact(derivative, z)
                if exact is None:
                    continue
                expr = act.derivative if derivative else act.expr
                assert sympy.Rational(exact[0].numerator, exact[0].denominator) == expr.subs(X, sympy.Rational(z.numerator, z.denominator))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["float4_e2m1fn", "float6_e3m2fn", "float8_e4m3", "float8_e5m2"]),
       st.floats(min_value=-300, max_value=300, allow_nan=False))
def test_a_bracket_holds_the_value_and_both_ends_round_to_it(fmt_name, y):
    fmt = get_format(fmt_name)
    yq = Fraction(y)
    try:
        v = round_fraction(yq, fmt)
    except CondcheckError:
        return
    lo, hi, margin = bracket(mpmath.mpf(y), v, fmt)
    assert lo <= yq <= hi and margin >= 0
    assert round_fraction(lo, fmt) == v and round_fraction(hi, fmt) == v


def test_a_dyadic_term_has_an_odd_significand():
    assert parts(Fraction(240)) == (15, 4)
    assert term(Fraction(-3, 8)) == "(Float radix2 (-3) (-3))"
    assert term(0) == "Dzero"


def test_the_claims_of_a_certificate_are_its_witness_values():
    c = read_claims(_cert("gelu", "float8_e4m3"))
    w1 = c.witnesses["1"]
    assert (w1.z_dead, w1.L, w1.sigma_live) == (Fraction(-4), Fraction(0), Fraction(-1, 512))
    assert c.witnesses["2"].eta_0_unbounded and c.witnesses["2"].eta_0 == 1
    assert c.witnesses["3"].route == "a"


def test_a_failing_condition_needs_facts_at_every_value():
    c = read_claims(_cert("sigmoid", "float4_e2m1fn"))
    S, D = plan(c)
    assert S == D == set(get_format("float4_e2m1fn").fractions())


def test_the_theorem_states_the_negation_of_each_failing_condition(tmp_path):
    c = read_claims(_cert("swish", "float6_e2m3fn"))
    write_development(c, tmp_path)
    main = (tmp_path / "Main.v").read_text()
    assert "~ Condition1 float6_e2m3fn SWISH" in main
    assert "(Condition2 float6_e2m3fn SWISH /\\ Condition2_at float6_e2m3fn SWISH witness_2)" in main
    assert "Admitted" not in "".join(p.read_text() for p in tmp_path.rglob("*.v"))


def test_a_changed_witness_value_is_found_by_the_precheck():
    cert = _cert("relu", "float4_e2m1fn")
    cert["conditions"]["1"]["witness"]["sigma(live)"]["fraction"] = "3"
    cert["conditions"]["1"]["witness"]["sigma(live)"]["hex"] = "0x1.8p+1"
    problems = precheck(cert, read_claims(cert))
    assert any("sigma~(live)" in p for p in problems)


def test_prove_refuses_a_false_certificate_before_writing(tmp_path):
    cert = _cert("sigmoid", "float4_e2m1fn")
    cert["conditions"]["2"]["holds"] = True
    cert["conditions"]["2"]["witness"] = _cert("relu", "float4_e2m1fn")["conditions"]["2"]["witness"]
    cert["holds"] = False
    with pytest.raises(CondcheckError, match="is false, no proof written"):
        prove_certificate(cert, tmp_path / "dev", run=False)
    assert not (tmp_path / "dev").exists()


@pytest.mark.parametrize("args, message", [
    (["relu", "b70_8"], "at most 64 bits"),
    (["mish", "float8_e4m3"], "no Coq definition"),
    (["relu"], "give ACTIVATION and FORMAT"),
    (["relu", "float8_e4m3", "--certificate", "c.json"], "exactly one of"),
])
def test_prove_gives_a_one_line_error_for_bad_input(tmp_path, args, message):
    out = subprocess.run([sys.executable, "-m", "condcheck", "prove", *args, "--out", str(tmp_path / "d")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_print_assumptions_output_is_read_as_axiom_names():
    text = ("Axioms:\nClassicalDedekindReals.sig_not_dec : forall P : Prop, {~ ~ P} + {~ P}\n"
            "Uint63.add_spec\n  : forall x y : int, x = y\ns_3 : fact_holds F g f\n")
    assert coqrun.parse_assumptions(text) == ["ClassicalDedekindReals.sig_not_dec", "Uint63.add_spec", "s_3"]
    assert coqrun.parse_assumptions("Closed under the global context\n") == []


# ---- with Coq -------------------------------------------------------------------------------------------
@contextmanager
def _shared(tmp_path_factory, name):
    """A folder every xdist worker of this run shares (the folder pytest-xdist's workers have in common),
    held under a lock: the first worker to get here builds what the folder should hold, the others find
    it built.  The Coq developments below are compiled once per run, not once per worker."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root / name


def _once(tmp_path_factory, name, build) -> dict:
    """``build(folder)`` once per run (see :func:`_shared`); its JSON result."""
    with _shared(tmp_path_factory, name) as folder:
        done = folder / "result.json"
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(build(folder)))
        return json.loads(done.read_text())


@pytest.fixture(scope="module")
def sigmoid_float4(tmp_path_factory):
    """condcheck prove sigmoid float4_e2m1fn (every condition fails), run from the command line."""
    def build(folder):
        out = subprocess.run([sys.executable, "-m", "condcheck", "prove", "sigmoid", "float4_e2m1fn", "--out",
                              str(folder / "dev"), "--json", "-q"], capture_output=True, text=True)
        return {"returncode": out.returncode, "stdout": out.stdout, "stderr": out.stderr}
    return SimpleNamespace(**_once(tmp_path_factory, "coq-sigmoid4", build))


def _seeded(sigmoid_float4, directory, files=library.FILES):
    """``directory`` with the library already compiled in sigmoid_float4's development (byte for byte the
    same files: prove leaves them, and make rebuilds nothing there), so that the library is compiled once
    per run rather than once per development."""
    src = Path(json.loads(sigmoid_float4.stdout)["directory"]) / "lib"
    lib = Path(directory) / "lib"
    lib.mkdir(parents=True)
    for name in files:
        stem = name[:-2]
        for p in [*src.glob(f"{stem}.*"), *src.glob(f".{stem}.aux")]:
            shutil.copy2(p, lib / p.name)
    return directory


@pytest.fixture(scope="module")
def relu_float8(sigmoid_float4, tmp_path_factory):
    def build(folder):
        return prove("relu", "float8_e4m3", _seeded(sigmoid_float4, folder / "dev"), quiet=True).to_dict()
    return ProofResult.from_dict(_once(tmp_path_factory, "coq-relu8", build))


@pytest.mark.slow
@needs_coq
def test_proving_again_into_the_same_directory_recompiles_nothing(sigmoid_float4, tmp_path):
    d = tmp_path / "dev"
    shutil.copytree(json.loads(sigmoid_float4.stdout)["directory"], d)
    r = prove("sigmoid", "float4_e2m1fn", d, quiet=True)
    assert r.ok and r.coq["files"] == {}


@needs_coq
def test_coq_accepts_the_negations_for_sigmoid_on_float4_e2m1fn(sigmoid_float4):
    assert sigmoid_float4.returncode == 0, sigmoid_float4.stderr
    d = json.loads(sigmoid_float4.stdout)
    assert d["coq"]["ok"] and d["statement"].count("~ Condition") == 3
    assert d["coq"]["versions"]["coq"] and d["coq"]["versions"]["flocq"]
    assert (Path(d["directory"]) / "Main.v").exists()


@needs_coq
def test_coq_accepts_every_clause_of_relu_on_float8_e4m3(relu_float8):
    assert relu_float8.ok, relu_float8.coq.get("log")
    assert "Condition3b_at" in relu_float8.statement


#: what Print Assumptions may list: the axioms of Coq's reals and excluded middle (no primitive integers
#: or floats, no axiom of a development)
REAL_AXIOM_MODULES = {"ClassicalDedekindReals", "FunctionalExtensionality", "Classical_Prop"}


@needs_coq
def test_print_assumptions_shows_only_the_axioms_of_the_reals(sigmoid_float4, relu_float8):
    # sigmoid's facts are proved by interval: its primitive-number backends would show here
    for names in (json.loads(sigmoid_float4.stdout)["coq"]["assumptions"], relu_float8.coq["assumptions"]):
        assert names and {n.split(".")[0] for n in names} <= REAL_AXIOM_MODULES


def test_an_axiom_of_the_primitive_floats_is_unexpected():
    names = ["ClassicalDedekindReals.sig_not_dec", "FloatAxioms.sub_spec", "PrimInt63.sub", "Classical_Prop.classic"]
    assert coqrun.unexpected_assumptions(names) == ["FloatAxioms.sub_spec", "PrimInt63.sub"]


@needs_coq
def test_an_admitted_fact_makes_the_development_not_ok(relu_float8, tmp_path):
    d = tmp_path / "dev"
    shutil.copytree(relu_float8.directory, d)
    f = d / "Facts_s_0.v"
    f.write_text(f.read_text().replace("Qed.", "Admitted.", 1))
    r = coqrun.check_development(d, quiet=True)
    assert not r.ok
    assert [a.split(".")[-1] for a in r.unexpected_assumptions] == ["s_0"]


@needs_coq
def test_coq_rejects_a_false_certificate_written_without_the_precheck(sigmoid_float4, tmp_path):
    cert = _cert("relu", "float4_e2m1fn")
    w = cert["conditions"]["1"]["witness"]
    w["sigma(live)"] = dict(w["sigma(live)"], fraction="3", hex="0x1.8p+1")
    r = prove_certificate(cert, _seeded(sigmoid_float4, tmp_path / "dev"), precheck_first=False, quiet=True)
    assert r.ok is False
    assert r.coq["files"]["Facts.vo"]["built"] and not r.coq["files"]["Main.vo"]["built"]


# ---- networks -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_network(tmp_path_factory):
    """A Theorem 5 network for ReLU on float8_e4m3 at 4 sampled points (196 nonzero parameters)."""
    def build(folder):
        out = subprocess.run([sys.executable, "-m", "condcheck", "construct", "theorem5", "relu", "float8_e4m3",
                              "--domain", "sample:4:0", "--dim", "1", "--targets", "random:0", "--out",
                              str(folder / "net.json")], capture_output=True, text=True)
        return {"returncode": out.returncode, "stderr": out.stderr, "path": str(folder / "net.json")}
    made = _once(tmp_path_factory, "coq-net", build)
    assert made["returncode"] == 0, made["stderr"]
    return Path(made["path"])


def test_a_network_development_states_its_claim_and_facts_at_its_pre_activations(small_network, tmp_path):
    from condcheck.proofs.network_proof import prove_network
    r = prove_network(small_network, tmp_path / "dev", run=False)
    assert r.statement == "claim_holds float8_e4m3 RELU net claim"
    data = (tmp_path / "dev" / "Claim.v").read_text()
    assert data.count("Case [") == 4
    assert 0 < r.facts["sigma"] == r.facts["dsigma"] <= get_format("float8_e4m3").count_finite()


@pytest.fixture(scope="module")
def small_network_proof(small_network, sigmoid_float4, tmp_path_factory):
    from condcheck.proofs.network_proof import prove_network
    def build(folder):
        d = _seeded(sigmoid_float4, folder / "dev", library.NETWORK_FILES)
        return prove_network(small_network, d, quiet=True).to_dict()
    return ProofResult.from_dict(_once(tmp_path_factory, "coq-netdev", build))


@needs_coq
def test_coq_accepts_the_claim_of_a_small_theorem5_network(small_network_proof):
    r = small_network_proof
    assert r.ok, r.coq.get("log")
    assert {n.split(".")[0] for n in r.coq["assumptions"]} <= REAL_AXIOM_MODULES


def _check_with_claim_changed(proof, tmp_path, edit):
    """Coq's result on a copy of a network development whose Claim.v text went through ``edit`` (the
    compiled Claim and Main removed, so that both are built again)."""
    d = tmp_path / "dev"
    shutil.copytree(proof.directory, d)
    for p in [*d.glob("Claim.vo*"), *d.glob("Main.vo*")]:
        p.unlink()
    claim = d / "Claim.v"
    claim.write_text(edit(claim.read_text()))
    return coqrun.check_development(d, quiet=True)


@needs_coq
def test_coq_rejects_a_network_claim_with_one_value_changed(small_network_proof, tmp_path):
    def edit(text):
        i = text.index("Case [")
        j = text.index("] ", i) + 2                   # after the point: the claimed value's term
        k = text.index(" [", j)
        return text[:j] + "(Float radix2 (12345) (0))" + text[k:]
    r = _check_with_claim_changed(small_network_proof, tmp_path, edit)
    assert not r.ok
    assert r.files["Claim.vo"]["built"] and not r.files["Main.vo"]["built"]


@pytest.fixture(scope="module")
def small_theorem7_proof(sigmoid_float4, tmp_path_factory):
    """A Theorem 7 network for ReLU on float6_e3m2fn at x = 1/2, every y (63 values), proved (about 9 s of
    Coq beside the shared library)."""
    from condcheck.proofs.network_proof import prove_network
    def build(folder):
        (folder / "points.json").write_text("[[0.5]]")
        out = subprocess.run([sys.executable, "-m", "condcheck", "construct", "theorem7", "relu", "float6_e3m2fn",
                              "--domain", str(folder / "points.json"), "--dim", "1", "--targets", "random:0",
                              "--out", str(folder / "net.json")], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        d = _seeded(sigmoid_float4, folder / "dev", library.NETWORK_FILES)
        return prove_network(folder / "net.json", d, quiet=True).to_dict()
    return ProofResult.from_dict(_once(tmp_path_factory, "coq-net7", build))


@needs_coq
def test_coq_accepts_the_claim_of_a_theorem7_network_at_every_upstream_value(small_theorem7_proof):
    r = small_theorem7_proof
    assert r.ok, r.coq.get("log")
    claim = (Path(r.directory) / "Claim.v").read_text()
    case = claim[claim.index("Case ["):]
    assert claim.count("Case [") == 1 and case.count(", [") == 63        # one (y, gradient) pair per y


@needs_coq
def test_coq_rejects_a_theorem7_claim_with_one_gradient_changed(small_theorem7_proof, tmp_path):
    def edit(text):
        i = text.index(", [", text.rindex("Case ["))      # the last point's first (y, gradient) pair
        j = text.index("]", i)                              # d = 1: the gradient is one term
        return text[:i] + ", [(Float radix2 (12345) (0))" + text[j:]
    r = _check_with_claim_changed(small_theorem7_proof, tmp_path, edit)
    assert not r.ok
    assert r.files["Claim.vo"]["built"] and not r.files["Main.vo"]["built"]


# ---- reports --------------------------------------------------------------------------------------------
@needs_coq
def test_the_report_of_a_proved_pair_says_it_is_kernel_checked_with_the_development_hash(sigmoid_float4, tmp_path):
    from reports.condition_report import write_report
    from reports.latex import tt
    d = json.loads(sigmoid_float4.stdout)
    rep = write_report("sigmoid", "float4_e2m1fn", out=tmp_path, figures=False, proof=d["directory"])
    tex = rep.tex.read_text()
    v = d["coq"]["versions"]
    assert f"kernel-checked by Coq {v['coq']}, Flocq {v['flocq']}" in tex
    assert tt(coqrun.development_hash(d["directory"])) in tex


@needs_coq
def test_a_report_refuses_a_proof_of_another_pair(sigmoid_float4, tmp_path):
    from reports.condition_report import write_report
    with pytest.raises(CondcheckError, match="proves sigmoid on float4_e2m1fn, not relu"):
        write_report("relu", "float4_e2m1fn", out=tmp_path, figures=False,
                     proof=json.loads(sigmoid_float4.stdout)["directory"])


@needs_coq
def test_a_report_refuses_a_proof_whose_files_changed_after_coq_checked_them(sigmoid_float4, tmp_path):
    from reports.condition_report import write_report
    d = tmp_path / "dev"
    shutil.copytree(json.loads(sigmoid_float4.stdout)["directory"], d)
    (d / "Main.v").write_text((d / "Main.v").read_text() + "\n(* edited *)\n")
    with pytest.raises(CondcheckError, match="changed since Coq checked them"):
        write_report("sigmoid", "float4_e2m1fn", out=tmp_path / "rep", figures=False, proof=d)


def test_the_primitive_integers_axioms_are_counted_and_the_others_named():
    from condcheck.proofs.cli import assumptions_text
    text = assumptions_text(["Uint63.add_spec", "ClassicalDedekindReals.sig_not_dec", "PrimInt63.add",
                             "Uint63.sub_spec", "Classical_Prop.classic"])
    assert text == ("ClassicalDedekindReals.sig_not_dec, Classical_Prop.classic; "
                    "of the primitive integers and floats: 1 PrimInt63, 2 Uint63")
    assert assumptions_text([]) == "none (closed under the global context)"
