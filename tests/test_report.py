"""LaTeX reports (issue 6): they compile, and the numbers in the PDF are the certificate's strings.

Compiled PDFs are read back with pdftotext and compared with the JSON certificate written beside each
report, character for character (the only normalization is Unicode NFKC, which undoes typographic
ligatures such as "fi", and removing whitespace where a long value may wrap across lines).
"""
import json
import re
import shutil
import subprocess
import unicodedata
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conditions import condition1, condition2, condition3
from condcheck.activations import BUILTIN_ACTIVATIONS
from condcheck.cli import main
from condcheck.formats import num_text
from condcheck.matrix import MATRIX_FORMATS
from condcheck.netfile import Claim, save_network
from condcheck.network import Layer, Network
from reports import condition_report as rp
from reports.latex import escape, macro_name, mangle, number_word

HAVE_TEX = shutil.which("pdflatex") is not None and shutil.which("pdftotext") is not None
needs_tex = pytest.mark.skipif(not HAVE_TEX, reason="pdflatex or pdftotext is not installed "
                                                    "(apt-get install texlive-latex-base lmodern poppler-utils)")
CASES = [("gelu", "float8_e4m3"),        # every condition holds, exhaustive
         ("sigmoid", "float4_e2m1fn"),   # every condition fails, with clauses and counterexamples
         ("relu", "float32")]            # proved symbolically (Condition 1 by the range check), sampled figure


def _text(pdf: Path, layout: bool = True) -> str:
    args = ["pdftotext"] + (["-layout"] if layout else []) + [str(pdf), "-"]
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout.decode("utf-8")
    return unicodedata.normalize("NFKC", out)


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _values(record, prefix=""):
    """(name, exact value) of every hex/fraction/bits record in a witness or counterexample."""
    for k, v in record.items():
        if isinstance(v, dict) and set(v) == {"hex", "fraction", "bits"}:
            yield prefix + k, v
        elif isinstance(v, dict):
            yield from _values(v, f"{prefix}{k}.")
        elif isinstance(v, list):
            for i, item in enumerate(v):
                yield from _values({f"{k}[{i}]": item}, prefix)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    made = {}
    for act, fmt in CASES:
        rep = rp.write_report(act, fmt, out=out)
        if HAVE_TEX:
            rp.compile_pdf(rep.tex)
        made[(act, fmt)] = rep
    return made


@pytest.fixture(scope="module")
def all_reports(tmp_path_factory):
    """`condcheck report --all --no-figures` once: 168 reports, the catalog and the macros file."""
    out = tmp_path_factory.mktemp("all")
    res = CliRunner().invoke(main, ["report", "--all", "--no-figures", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out, res


def _cert(rep):
    return json.loads(rep.json.read_text())


# ---- one report -------------------------------------------------------------------------------------
@needs_tex
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c))
def test_every_witness_value_in_the_pdf_equals_the_certificate_as_hex_fraction_and_bits(reports, case):
    rep = reports[case]
    cert = _cert(rep)
    text = _squeezed(_text(rep.tex.with_suffix(".pdf")))    # layout: a row's name, then its value
    seen = 0
    for k in ("1", "2", "3"):
        c = cert["conditions"][k]
        for name, v in _values((c["witness"] or {}) | (c["counterexample"] or {})):
            triple = f"hex{v['hex']},fraction{v['fraction']},bits{v['bits']}"
            # a long nested name may wrap after a dot, putting its tail below the value
            rows = [name + triple] + [name[:i + 1] + triple + name[i + 1:] for i, ch in enumerate(name) if ch == "."]
            assert any(row in text for row in rows), (k, name)
            seen += 1
    assert seen >= {"gelu": 21, "sigmoid": 9, "relu": 13}[case[0]]


@needs_tex
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c))
def test_the_pdf_states_the_verdict_and_method_of_every_condition_as_the_certificate_does(reports, case):
    rep = reports[case]
    cert = _cert(rep)
    text = _text(rep.tex.with_suffix(".pdf"))
    word = {True: "holds", False: "fails", None: "undecided"}[cert["holds"]]
    assert f"Overall: {word}." in text
    assert re.search(rf"^\s*overall verdict\s+{word}$", text, re.M)
    for k in ("1", "2", "3"):
        c = cert["conditions"][k]
        assert re.search(rf"^Condition {k}: .* — {c['verdict']}$", text, re.M), k
        assert re.search(rf"^\s*Condition {k}\s+{c['verdict']} \({c['method']}\)$", text, re.M), k
        assert f"Verdict: {c['verdict']} (method: {c['method']})." in text


@needs_tex
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c))
def test_M_sigma_H_sigma_the_branch_and_the_depth_bounds_in_the_pdf_equal_the_certificate(reports, case):
    rep = reports[case]
    cert = _cert(rep)
    text = _text(rep.tex.with_suffix(".pdf"))
    for sym, key in (("Mσ", "M_sigma"), ("Hσ", "H_sigma")):
        v = cert[key]                                       # the exact value as a hexadecimal text
        shown = num_text(Fraction(float.fromhex(v)))
        assert re.search(rf"^\s*{sym}\s+{re.escape(shown)} \(hex {re.escape(v)}\)$", text, re.M), key
    assert re.search(rf"^\s*theorem branch\s+{re.escape(cert['theorem_branch'])}$", text, re.M)
    d = cert["depth_bounds"]
    for thm in ("5", "7"):
        b = d[f"theorem{thm}"]
        assert re.search(rf"depth, Theorem {thm}\s+L ≥ {b['openreview']} \(OpenReview\), L ≥ {b['arxiv_v2']} "
                         rf"\(arXiv v2\)", text), thm


@needs_tex
def test_a_failing_condition_shows_its_failing_clause_word_for_word(reports):
    rep = reports[("sigmoid", "float4_e2m1fn")]
    cert = _cert(rep)
    text = _squeezed(_text(rep.tex.with_suffix(".pdf"), layout=False))
    for k in ("1", "2", "3"):
        assert _squeezed(f"Failing clause: {cert['conditions'][k]['failing_clause']}.") in text, k


@needs_tex
def test_an_undecided_condition_shows_why_it_is_undecided(tmp_path):
    # under float32-upcast the range check of Condition 1 does not apply: undecided, with the reason
    rep = rp.write_report("relu", "float32", "float32-upcast", out=tmp_path, figures=False)
    rp.compile_pdf(rep.tex)
    assert _cert(rep)["conditions"]["1"]["verdict"] == "undecided"
    reason = rep.result.conditions["1"]["reason"]          # the checker's log, not a certificate statement
    assert _squeezed(f"Why undecided: {reason}.") in _squeezed(_text(rep.tex.with_suffix(".pdf"), layout=False))


def test_each_condition_statement_in_the_report_is_the_text_the_checker_implements(reports):
    tex = reports[("gelu", "float8_e4m3")].tex.read_text()
    for module in (condition1, condition2, condition3):
        assert module.STATEMENT in tex


def test_the_figure_is_drawn_from_every_value_up_to_16_bits_and_says_so_when_sampled(reports):
    small, wide = reports[("gelu", "float8_e4m3")], reports[("relu", "float32")]
    assert small.figure.exists() and wide.figure.exists()
    assert small.figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Every one of the" in small.tex.read_text() and "Sampled" not in small.tex.read_text()
    assert r"\textbf{Sampled}" in wide.tex.read_text()
    assert f"\\includegraphics[width=0.9\\linewidth]{{{wide.figure.name}}}" in wide.tex.read_text()


@needs_tex
def test_the_sampled_caption_survives_into_the_pdf(reports):
    text = _text(reports[("relu", "float32")].tex.with_suffix(".pdf"), layout=False)
    assert "Sampled: " in text and "4,278,190,079 finite values of float32" in _squeeze_spaces(text)


def _squeeze_spaces(text):
    return re.sub(r"\s+", " ", text)


def test_the_certificate_beside_the_report_is_the_checkers_certificate(reports):
    from condcheck.check import check_activation
    rep = reports[("gelu", "float8_e4m3")]
    a, b = _cert(rep), check_activation("gelu", "float8_e4m3").to_certificate()
    a.pop("seconds"), b.pop("seconds")                      # metadata: the only field that may differ
    assert a == json.loads(json.dumps(b))


# ---- macros -----------------------------------------------------------------------------------------
def test_names_are_mangled_to_letters_with_digits_as_words():
    assert mangle("float8_e4m3") == "FloateightEfourMthree"
    assert mangle("float8_e4m3b11fnuz") == "FloateightEfourMthreeBelevenFnuz"
    assert macro_name("gelu", "float8_e4m3", "M_sigma") == "CCgeluFloateightEfourMthreeMSigma"
    assert mangle("sigma(-s)") != mangle("sigma(s)")
    assert mangle("dsigma(delta_0)") == "DsigmaDeltazero"
    assert [number_word(n) for n in (0, 16, 64, 100, 569, 1074)] == \
        ["zero", "sixteen", "sixtyfour", "onehundred", "fivehundredsixtynine", "onethousandseventyfour"]


def test_macro_names_of_all_168_reports_are_letters_only_and_unique(all_reports):
    out, _ = all_reports
    names = re.findall(r"\\newcommand\{\\([^}]*)\}", (out / "macros.tex").read_text())
    assert len(names) > 168 * 40
    assert all(re.fullmatch(r"[A-Za-z]+", n) for n in names)
    assert len(set(names)) == len(names)


@needs_tex
def test_a_paper_that_inputs_macros_tex_prints_the_certificate_numbers(all_reports, tmp_path):
    out, _ = all_reports
    cert = json.loads((out / "gelu-float8_e4m3.json").read_text())
    d0 = cert["conditions"]["2"]["witness"]["delta_0"]
    shutil.copy(out / "macros.tex", tmp_path / "macros.tex")
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\\usepackage[T1]{fontenc}\\usepackage{lmodern}\\input{macros.tex}\n"
        "\\begin{document}\n"
        "A: \\CCgeluFloateightEfourMthreeConditiontwoDeltazeroHex\n\n"
        "B: \\CCgeluFloateightEfourMthreeConditiontwoDeltazeroFraction\n\n"
        "C: \\CCgeluFloateightEfourMthreeConditiontwoDeltazeroBits\n\n"
        "D: \\CCgeluFloateightEfourMthreeMSigma\n\n"
        "E: \\CCgeluFloateightEfourMthreeDepthTheoremsevenArxivVtwo\n\n"
        "F: \\CCsigmoidFloatfourEtwoMoneFnVerdict\n\n"
        "\\end{document}\n")
    rp.compile_pdf(tmp_path / "paper.tex")
    lines = [ln.strip() for ln in _text(tmp_path / "paper.pdf").splitlines() if ln.strip()]
    assert lines[:6] == [f"A: {d0['hex']}", f"B: {d0['fraction']}", f"C: {d0['bits']}", f"D: {num_text(Fraction(float.fromhex(cert['M_sigma'])))}",
                         f"E: {cert['depth_bounds']['theorem7']['arxiv_v2']}", "F: fails"]


# ---- catalog ----------------------------------------------------------------------------------------
def test_the_catalog_links_every_cell_to_a_report_that_was_written(all_reports):
    out, res = all_reports
    tex = (out / "catalog.tex").read_text()
    links = re.findall(r"\\href\{([^}]*)\}", tex)
    want = [f"{a}-{f}.pdf" for a in BUILTIN_ACTIVATIONS for f in MATRIX_FORMATS]
    assert links == want
    assert all((out / link.replace(".pdf", ".tex")).exists() for link in links)
    assert "168 reports, catalog.tex and macros.tex" in res.output


@needs_tex
def test_the_catalog_compiles_to_one_page_with_the_matrix_verdicts_and_168_links(all_reports):
    out, _ = all_reports
    pdf = rp.compile_pdf(out / "catalog.tex")
    info = subprocess.run(["pdfinfo", str(pdf)], stdout=subprocess.PIPE, check=True).stdout.decode()
    assert re.search(r"^Pages:\s+1$", info, re.M)
    text = _text(pdf)
    for a in BUILTIN_ACTIVATIONS:
        certs = [json.loads((out / f"{a}-{f}.json").read_text()) for f in MATRIX_FORMATS]
        row = next(ln for ln in text.splitlines() if ln.strip().startswith(a + " "))
        cells = re.findall(r"[hF?]{3} (?:holds|fails|undecided)", row)
        marks = ["".join({True: "h", False: "F", None: "?"}[c["conditions"][k]["holds"]] for k in "123") + " "
                 + {True: "holds", False: "fails", None: "undecided"}[c["holds"]] for c in certs]
        assert cells == marks, a
    html = subprocess.run(["pdftohtml", "-stdout", "-i", "-noframes", str(pdf)], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, check=True).stdout.decode()
    assert len(set(re.findall(r'href="([^"]+\.pdf)"', html))) == 168


# ---- network reports --------------------------------------------------------------------------------
def _hand_network(path, wrong=False):
    net = Network("float8_e4m3", "gelu", [Layer(np.array([[0.5], [-1.25]]), [0.125, 0.0]),
                                          Layer(np.array([[1.0, -2.0]]), [0.0])])
    points = [[1.0], [-2.0], [0.5]]
    values = [float(net.forward_exact(p)[0]) for p in points]
    grads = [[float(g) for g in net.gradient_exact(p, 1.0)] for p in points]
    if wrong:
        values[1] = values[1] + 1.0
    save_network(path, net, Claim(5, points, values, [1.0, 1.0, 1.0], grads))
    return net


@needs_tex
def test_a_network_report_shows_depth_widths_parameters_and_the_verification_counts(tmp_path):
    net = _hand_network(tmp_path / "tiny.json")
    res = CliRunner().invoke(main, ["report", "--network", str(tmp_path / "tiny.json"), "--out", str(tmp_path), "--pdf"])
    assert res.exit_code == 0, res.output
    text = _text(tmp_path / "tiny-network.pdf")
    assert re.search(r"^\s*depth L \(affine maps\)\s+2$", text, re.M)
    assert re.search(r"^\s*widths \(input first\)\s+1, 2, 1$", text, re.M)
    assert re.search(rf"^\s*parameters \(dense count\)\s+{net.parameter_count}$", text, re.M)
    assert re.search(rf"^\s*nonzero parameters\s+{net.nonzero_parameters}$", text, re.M)
    assert re.search(r"^\s*points \(domain size\)\s+3$", text, re.M)
    assert "VERIFIED" in text and "values 3 of 3 equal; AD gradients 3 of 3 equal" in _squeeze_spaces(text)


def test_a_network_report_of_a_false_claim_says_failed_and_exits_1(tmp_path):
    _hand_network(tmp_path / "bad.json", wrong=True)
    res = CliRunner().invoke(main, ["report", "--network", str(tmp_path / "bad.json"), "--out", str(tmp_path)])
    assert res.exit_code == 1
    tex = (tmp_path / "bad-network.tex").read_text()
    assert r"\textbf{FAILED}" in tex and r"values \texttt{2} of \texttt{3} equal" in tex


@needs_tex
def test_a_report_of_a_theorem5_construction_counts_what_verify_counts(tmp_path):
    from condcheck.theorem5 import construct_theorem5
    X = np.array([[-0.5], [0.0], [0.75]])
    net, claim = construct_theorem5("relu", "float6_e3m2fn", X, [1.0, -2.0, 0.5], [1.0, 0.5, 0.0],
                                    [[2.0], [-1.0], [0.0]])
    save_network(tmp_path / "t5.json", net, claim)
    from reports.network_report import write_network_report
    rep = write_network_report(tmp_path / "t5.json", out=tmp_path)
    assert rep.verified and rep.facts["widths"] == net.widths and rep.facts["depth"] == net.depth
    pdf = rp.compile_pdf(rep.tex)
    text = _text(pdf)
    assert re.search(r"^\s*widths \(input first\)\s+" + re.escape(", ".join(map(str, net.widths))) + "$", text, re.M)
    assert "values 3 of 3 equal; AD gradients 3 of 3 equal" in _squeeze_spaces(text)


# ---- the command line -------------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["report", "nosuchact", "float8_e4m3"], "unknown activation"),
    (["report", "gelu", "float9_e9"], "float9_e9"),
    (["report", "--network", "missing.json"], "does not exist"),
])
def test_bad_input_exits_2_with_a_one_line_message_and_no_traceback(tmp_path, args, message):
    res = CliRunner().invoke(main, args + ["--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0].lower()
    assert "Traceback" not in res.output


@pytest.mark.parametrize("args", [[], ["gelu"], ["gelu", "float8_e4m3", "--all"], ["--all", "--network", "x.json"]])
def test_a_report_call_that_names_no_single_mode_is_a_usage_error(tmp_path, args):
    res = CliRunner().invoke(main, ["report", *args, "--out", str(tmp_path)])
    assert res.exit_code == 2 and "exactly one" in res.output


def test_a_missing_pdflatex_is_reported_in_one_line_with_exit_2(tmp_path, monkeypatch):
    monkeypatch.setattr(rp.shutil, "which", lambda name: None)
    res = CliRunner().invoke(main, ["report", "relu", "float4_e2m1fn", "--no-figures", "--out", str(tmp_path), "--pdf"])
    assert res.exit_code == 2
    assert "error: pdflatex is not installed" in res.output
    assert (tmp_path / "relu-float4_e2m1fn.tex").exists()


def test_a_single_report_exits_0_and_names_the_files_it_wrote(tmp_path):
    res = CliRunner().invoke(main, ["report", "sigmoid", "float4_e2m1fn", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"{tmp_path / 'sigmoid-float4_e2m1fn.tex'}: Conditions 1-3 fails")
    assert (tmp_path / "sigmoid-float4_e2m1fn-sigma.png").exists()
    assert (tmp_path / "sigmoid-float4_e2m1fn-macros.tex").exists()


@pytest.mark.parametrize("command", [["report"], ["check"], ["verify"], ["recheck"], ["matrix"], ["formats"],
                                     ["bench"], ["construct", "theorem5"]])
def test_every_command_help_shows_an_example(command):
    res = CliRunner().invoke(main, [*command, "--help"])
    assert res.exit_code == 0 and "Example" in res.output and "condcheck " in res.output


def test_escaped_text_keeps_every_character_a_reader_types():
    assert escape("sigma~'(z) = +-2^k, a_b <= |c| -- 100%") == (
        r"sigma\textasciitilde{}\textquotesingle{}(z) = +-2\textasciicircum{}k, a\_b \textless{}= "
        r"\textbar{}c\textbar{} -{}- 100\%")


@needs_tex
def test_a_latex_error_is_reported_with_its_line_and_the_log_file(tmp_path):
    (tmp_path / "broken.tex").write_text("\\documentclass{article}\n\\begin{document}\n\\nosuchmacro\n\\end{document}\n")
    with pytest.raises(rp.ReportError, match=r"pdflatex failed on .*broken\.tex \(\./broken\.tex:3: Undefined "
                                             r"control sequence\.\); log: .*broken\.log"):
        rp.compile_pdf(tmp_path / "broken.tex")
