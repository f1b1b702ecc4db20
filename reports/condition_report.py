"""LaTeX condition reports, the catalog, the macros file, and pdflatex.

A report is written from the condition certificate (``CheckResult.to_certificate()``), never from a
second computation, and the certificate is written beside it as JSON: every number in the PDF is a
string of that JSON, so the two can be compared mechanically (tests/test_report.py does).  The
checkers' evidence and reasons (their search log, not statements of the certificate) are printed
from the ``CheckResult``.  The
statements come from ``conditions.conditionN.STATEMENT``, the text each checker implements.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from condcheck import __version__
from condcheck.check import SCHEMA, CheckResult, check_activation
from condcheck.errors import CondcheckError
from condcheck.formats import get_format
from condcheck.rounded_activation import get_rounded
from conditions import condition1, condition2, condition3

from . import DEFAULT_OUT
from .latex import Macros, escape, macro_name, render, tt

STATEMENTS = {"1": condition1.STATEMENT, "2": condition2.STATEMENT, "3": condition3.STATEMENT}
TITLES = {"1": "inputs can be distinguished and gated", "2": "gradient suppression without overflow",
          "3": "a first-layer gradient source"}
VERDICT_WORD = {True: "holds", False: "fails", None: "undecided"}


class ReportError(CondcheckError):
    """A report could not be produced (e.g. pdflatex missing or failing)."""


def stem(activation: str, fmt: str, implementation: str = "exact") -> str:
    """File stem of a report: ``gelu-float8_e4m3`` (plus ``-float32-upcast`` for other implementations)."""
    return f"{activation}-{fmt}" + ("" if implementation == "exact" else f"-{implementation}")


def _is_value(v) -> bool:
    return isinstance(v, dict) and set(v) == {"hex", "fraction", "bits"}


def value_cell(v: dict) -> str:
    """An exact value as the certificate has it: hex, fraction and bits, each as typewriter text."""
    return f"hex {tt(v['hex'])}, fraction {tt(v['fraction'])}, bits {tt(v['bits'])}"


def _plain_cell(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return tt(str(v))
    return escape(v)


def _name(text: str) -> str:
    """A witness field name in typewriter type that may break after a dot (nested counterexamples)."""
    return r"\texttt{" + r".\allowbreak{}".join(escape(p) for p in text.split(".")) + "}"


def _rows(record: dict, prefix: str = "") -> list[str]:
    """Table rows for a witness or counterexample dict (nested dicts and lists flattened)."""
    rows = []
    for k, v in record.items():
        name = f"{prefix}{k}"
        if _is_value(v):
            rows.append(f"{_name(name)} & {value_cell(v)} \\\\")
        elif isinstance(v, dict):
            rows += _rows(v, f"{name}.")
        elif isinstance(v, list):
            for i, item in enumerate(v):
                rows += _rows({f"{k}[{i}]": item}, prefix)
        else:
            rows.append(f"{_name(name)} & {_plain_cell(v)} \\\\")
    return rows


def _table(rows: list[str]) -> str:
    if not rows:
        return ""
    return ("{\\small\\begin{longtable}{@{}>{\\raggedright\\arraybackslash}p{0.33\\linewidth}"
            ">{\\raggedright\\arraybackslash}p{0.63\\linewidth}@{}}\n" + "\n".join(rows) + "\n\\end{longtable}}")


def _constant_text(v: str) -> str:
    """M_sigma / H_sigma (the certificate's exact hexadecimal text) as a number."""
    from condcheck.formats import num_text
    from condcheck.hexfloat import parse_exact
    return num_text(parse_exact(v, "constant"))


def _float_cell(v) -> str:
    """M_sigma / H_sigma as the certificate stores them (an exact hexadecimal text), as a number and hex."""
    if v is None:
        return "not stated by the paper for this activation"
    return f"{tt(_constant_text(v))} (hex {tt(v)})"


def condition_section(key: str, c: dict, log: dict | None = None) -> str:
    """One condition: its statement, verdict, method, evidence (``log``: the checker's record, with
    "evidence" and "reason"), and witness or failure."""
    log = log or {}
    parts = [f"\\section*{{Condition {key}: {TITLES[key]} --- \\textbf{{{c['verdict']}}}}}",
             f"\\begin{{quote}}\n{STATEMENTS[key]}\n\\end{{quote}}",
             f"Verdict: \\textbf{{{c['verdict']}}} (method: {escape(c['method'])}).",
             f"Evidence: {escape(log['evidence']) if log.get('evidence') else 'none recorded'}."]
    if c["verdict"] == "holds":
        parts.append("Witness (every value exact):\n\n" + _table(_rows(c["witness"])))
    elif c["verdict"] == "fails":
        parts.append(f"Failing clause: {escape(c['failing_clause'])}.")
        if c.get("counterexample"):
            parts.append("Counterexample:\n\n" + _table(_rows(c["counterexample"])))
    else:
        parts.append(f"Why undecided: {escape(log.get('reason') or 'not recorded')}.")
    return "\n\n".join(parts)


def summary_rows(cert: dict) -> list[str]:
    fmt = get_format(cert["format"])
    d = cert["depth_bounds"]
    rows = [("activation", tt(cert["activation"])), ("format", tt(cert["format"])),
            ("format fields", f"{fmt.bits} bits, $M = {fmt.M}$, $E = {fmt.E}$, $e_{{\\min}} = {tt(fmt.e_min)}$, "
                              f"$e_{{\\max}} = {tt(fmt.e_max)}$, $\\Omega = {tt(_omega_text(fmt))}$, "
                              f"{tt(str(fmt.count_finite()))} finite values"),
            ("implementation", tt(cert["implementation"])),
            ("overall verdict", f"\\textbf{{{VERDICT_WORD[cert['holds']]}}}")]
    for k in ("1", "2", "3"):
        c = cert["conditions"][k]
        rows.append((f"Condition {k}", f"{c['verdict']} ({escape(c['method'])})"))
    rows += [("theorem branch", escape(cert["theorem_branch"])),
             ("$M_\\sigma$", _float_cell(cert["M_sigma"])), ("$H_\\sigma$", _float_cell(cert["H_sigma"])),
             ("source of $M_\\sigma$, $H_\\sigma$", escape(cert["constants_source"])),
             ("depth, Theorem 5", f"$L \\ge {tt(d['theorem5']['openreview'])}$ (OpenReview), "
                                  f"$L \\ge {tt(d['theorem5']['arxiv_v2'])}$ (arXiv v2)"),
             ("depth, Theorem 7", f"$L \\ge {tt(d['theorem7']['openreview'])}$ (OpenReview), "
                                  f"$L \\ge {tt(d['theorem7']['arxiv_v2'])}$ (arXiv v2)"),
             ("checked in", f"{cert['seconds']} s")]
    return [f"{a} & {b} \\\\" for a, b in rows]


def _omega_text(fmt) -> str:
    return repr(float(fmt.max)) if fmt.fits_float64 else str(fmt.max)


# ---- macros -----------------------------------------------------------------------------------------
def certificate_macros(cert: dict) -> Macros:
    """One \\newcommand per reported number of a certificate (verdicts and the branch as words)."""
    base = (cert["activation"], cert["format"]) + (() if cert["implementation"] == "exact"
                                                   else (cert["implementation"],))
    m = Macros()
    add = lambda latex, *q: m.add(macro_name(*base, *q), latex)     # noqa: E731
    add(VERDICT_WORD[cert["holds"]], "verdict")
    add(escape(cert["theorem_branch"]), "branch")
    for name in ("M_sigma", "H_sigma"):
        v = cert[name]
        add("n/a" if v is None else tt(_constant_text(v)), name)
        if v is not None:
            add(tt(v), name, "hex")
    for thm in ("theorem5", "theorem7"):
        for version, depth in cert["depth_bounds"][thm].items():
            add(str(depth), "depth", thm, version)
    add(str(get_format(cert["format"]).count_finite()), "finite values")
    for k in ("1", "2", "3"):
        c = cert["conditions"][k]
        cond = f"condition {k}"
        add(c["verdict"], cond, "verdict")
        add(escape(c["method"]), cond, "method")
        for wk, wv in (c["witness"] or {}).items():
            if _is_value(wv):
                add(tt(wv["hex"]), cond, wk, "hex")
                add(tt(wv["fraction"]), cond, wk, "fraction")
                add(tt(wv["bits"]), cond, wk, "bits")
            elif isinstance(wv, bool):
                add("true" if wv else "false", cond, wk)
            elif isinstance(wv, int):
                add(str(wv), cond, wk)
            elif wv is None:
                add("none", cond, wk)
            else:
                add(escape(wv), cond, wk)
    return m


# ---- one report -------------------------------------------------------------------------------------
@dataclass
class Report:
    tex: Path
    json: Path
    figure: Path | None
    result: CheckResult
    macros: Macros = field(repr=False, default_factory=Macros)


def write_report(activation, format, implementation: str = "exact", out=DEFAULT_OUT, figures: bool = True,
                 image_format: str = "png", result: CheckResult | None = None, macros_file: bool = True,
                 proof=None) -> Report:
    """Check (unless ``result`` is given) and write ``<stem>.tex``, ``<stem>.json`` and the figure.

    ``proof``: the directory of a Coq development of the pair (``condcheck prove``); the report then says
    that its verdicts are kernel-checked, naming Coq, Flocq and the development's hash.

    >>> import tempfile
    >>> from condcheck import write_report
    >>> rep = write_report("relu", "float4_e2m1fn", out=tempfile.mkdtemp(), figures=False)
    >>> rep.tex.name, rep.json.name, rep.result.holds
    ('relu-float4_e2m1fn.tex', 'relu-float4_e2m1fn.json', True)
    """
    from condcheck.cli_checks import output_folder
    out = output_folder(out, "out")              # before the check: a folder that cannot be written fails now
    res = result or check_activation(activation, format, implementation)
    cert = res.to_certificate()
    rows = summary_rows(cert)
    if proof is not None:
        from condcheck.proofs.record import kernel_note
        verdicts = {k: c["verdict"] for k, c in cert["conditions"].items()}
        note, digest = kernel_note(proof, res.activation, res.format, verdicts)
        rows.append(f"proof & {escape(note)} (development sha256 {tt(digest)}) \\\\")
    name = stem(res.activation, res.format, res.implementation)
    json_path = out / f"{name}.json"
    json_path.write_text(json.dumps(cert, indent=1) + "\n")
    fig_path = None
    if figures:
        from .plots import draw
        fig_path = out / f"{name}-sigma.{image_format}"
        fig = draw(get_rounded(res.activation, res.format, res.implementation), cert, str(fig_path), image_format)
        figure = ("\\begin{figure}[h]\n\\centering\n"
                  f"\\includegraphics[width=0.9\\linewidth]{{{fig_path.name}}}\n"
                  f"\\caption{{{fig.caption}}}\n\\end{{figure}}")
    else:
        figure = "No figure (written with \\texttt{--no-figures})."
    macros = certificate_macros(cert)
    tex = render("report.tex", preamble=render("preamble.tex"),
                 pdf_title=f"Conditions 1-3: {res.activation} on {res.format}",
                 activation=escape(res.activation), format=escape(res.format),
                 implementation=escape(res.implementation), version=__version__, schema=SCHEMA,
                 json_file=escape(json_path.name), verdict=VERDICT_WORD[res.holds],
                 semantics=escape(cert["semantics"]), summary_rows="\n".join(rows),
                 conditions="\n\n".join(condition_section(k, cert["conditions"][k], res.conditions[k])
                                         for k in ("1", "2", "3")),
                 figure=figure,
                 constants_note=("$M_\\sigma$ and $H_\\sigma$ are the paper's values for its six activations "
                                 "(arXiv 2605.01702)." if cert["M_sigma"] is not None else
                                 "The paper states $M_\\sigma$ and $H_\\sigma$ only for its six activations."))
    tex_path = out / f"{name}.tex"
    tex_path.write_text(tex)
    if macros_file:
        (out / f"{name}-macros.tex").write_text(macros.text(f"condcheck {__version__}: numbers of {name}.tex"))
    return Report(tex_path, json_path, fig_path, res, macros)


# ---- catalog and --all ------------------------------------------------------------------------------
def catalog_tex(results: dict, activations, formats, implementation: str = "exact") -> str:
    """One page: activations x formats, each cell the verdict marks linking the report's PDF."""
    from condcheck.matrix import cell
    header = " & ".join(["activation"] + [f"\\rotatebox{{90}}{{{tt(f)}}}" for f in formats])
    rows = []
    for a in activations:
        cells = [tt(a)]
        for f in formats:
            res = results[(a, f)]
            marks, word = cell(res).split(" ")
            link = f"{stem(a, f, implementation)}.pdf"
            cells.append(f"\\href{{{link}}}{{\\texttt{{{escape(marks)}}}\\,{word}}}")
        rows.append(" & ".join(cells) + " \\\\")
    counts = {w: sum(VERDICT_WORD[r.holds] == w for r in results.values()) for w in VERDICT_WORD.values()}
    legend = (f"{len(results)} checks: {counts['holds']} hold, {counts['fails']} fail, "
              f"{counts['undecided']} undecided. Numbers of every report: \\texttt{{macros.tex}}.")
    return render("catalog.tex", preamble=render("preamble.tex"), implementation=escape(implementation),
                  version=__version__, column_spec="l" * len(formats), header=header, rows="\n".join(rows),
                  legend=legend)


def write_all(out=DEFAULT_OUT, activations=None, formats=None, figures: bool = True, image_format: str = "png",
              progress=None) -> dict:
    """Every built-in activation x the matrix formats: reports, catalog.tex and macros.tex."""
    from condcheck.activations import BUILTIN_ACTIVATIONS
    from condcheck.matrix import MATRIX_FORMATS
    activations = tuple(activations or BUILTIN_ACTIVATIONS)
    formats = tuple(formats or MATRIX_FORMATS)
    t0 = time.perf_counter()
    out = Path(out)
    results, macros = {}, Macros()
    total = len(activations) * len(formats)
    for a in activations:
        for f in formats:
            rep = write_report(a, f, out=out, figures=figures, image_format=image_format, macros_file=False)
            results[(a, f)] = rep.result
            macros.update(rep.macros)
            if progress:
                progress(len(results), total, f"{a} {f}")
    (out / "catalog.tex").write_text(catalog_tex(results, activations, formats))
    (out / "macros.tex").write_text(macros.text(
        f"condcheck {__version__}: one macro per reported number of every report in this folder.\n"
        f"\\input{{macros.tex}} in a paper; names: \\CC<activation><Format><quantity>, letters only."))
    return {"reports": total, "macros": len(macros.items), "seconds": time.perf_counter() - t0,
            "results": results, "out": out}


# ---- pdflatex ---------------------------------------------------------------------------------------
def compile_pdf(tex_path, runs: int = 2) -> Path:
    """pdflatex in the report's folder (nonstop, halt on error); a second run only if LaTeX asks."""
    exe = shutil.which("pdflatex")
    if exe is None:
        raise ReportError("pdflatex is not installed (apt-get install texlive-latex-base lmodern); "
                          "the .tex files were written, compile them elsewhere or drop --pdf")
    tex_path = Path(tex_path)
    log = tex_path.with_suffix(".log")
    for _ in range(runs):
        proc = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
                               tex_path.name], cwd=tex_path.parent, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
        if proc.returncode != 0:
            text = proc.stdout.decode("utf-8", "replace")
            first = next((ln for ln in text.splitlines() if ln.startswith("!") or ":" in ln and ".tex:" in ln),
                         "see the log")
            raise ReportError(f"pdflatex failed on {tex_path} ({first.strip()}); log: {log}")
        if "Rerun to get" not in log.read_text(errors="replace"):
            break
    return tex_path.with_suffix(".pdf")
