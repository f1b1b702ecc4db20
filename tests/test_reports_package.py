"""The reports package: templates as package data, output outside the packages, and its place on top.

``reports`` sits above condcheck and conditions, beside the command line: it reads its templates with
importlib.resources (so an installed wheel or a zip has them), writes only where it is told (by default
``./condcheck-reports``), and nothing below it imports it.
"""
import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from click.testing import CliRunner

import condcheck
import conditions
import reports
from condcheck.cli import main
from reports.latex import template_text

ROOT = Path(reports.__file__).resolve().parent.parent
PACKAGES = {name: Path(mod.__file__).resolve().parent for name, mod in
            (("condcheck", condcheck), ("conditions", conditions), ("reports", reports))}
TEMPLATES = sorted(p.name for p in (PACKAGES["reports"] / "templates").glob("*.tex"))


def _imports(path: Path):
    """Every module name an import statement of ``path`` names (top-level or inside a function)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


def _tree(folder: Path) -> dict:
    """Every file under ``folder`` (bytecode caches left out) with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_package_holds_the_four_templates():
    assert TEMPLATES == ["catalog.tex", "network.tex", "preamble.tex", "report.tex"]


def test_the_templates_load_as_package_data_from_a_zipped_reports_package(tmp_path):
    # a zip has no file system path under reports/, so only importlib.resources can find the templates
    archive = tmp_path / "reports.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in PACKAGES["reports"].rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts:
                z.write(p, p.relative_to(ROOT).as_posix())
    code = ("import sys, reports, reports.latex as L\n"
            "assert reports.__file__.startswith(sys.argv[1]), reports.__file__\n"
            f"for name in {TEMPLATES!r}:\n"
            "    sys.stdout.write(L.template_text(name) + '\\0')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(archive), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-c", code, str(archive)], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stderr
    texts = proc.stdout.split("\0")[:-1]
    assert texts == [(PACKAGES["reports"] / "templates" / name).read_text() for name in TEMPLATES]


def test_a_template_that_is_not_in_the_package_is_a_one_line_error():
    try:
        template_text("nosuch.tex")
    except condcheck.CondcheckError as e:
        assert "templates/nosuch.tex" in str(e) and "\n" not in str(e)
    else:
        raise AssertionError("a missing template was read")


def test_condcheck_report_writes_into_condcheck_reports_of_the_current_directory_and_nothing_into_a_package(
        tmp_path, monkeypatch):
    before = {name: _tree(folder) for name, folder in PACKAGES.items()}
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["report", "sigmoid", "float4_e2m1fn"])
    assert res.exit_code == 0, res.output
    written = sorted(p.name for p in (tmp_path / reports.DEFAULT_OUT).iterdir())
    assert written == ["sigmoid-float4_e2m1fn-macros.tex", "sigmoid-float4_e2m1fn-sigma.png",
                       "sigmoid-float4_e2m1fn.json", "sigmoid-float4_e2m1fn.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [reports.DEFAULT_OUT]
    assert {name: _tree(folder) for name, folder in PACKAGES.items()} == before


def test_the_command_line_default_out_is_the_packages_default():
    option = next(p for p in main.commands["report"].params if p.name == "out")
    assert option.default == reports.DEFAULT_OUT == "condcheck-reports"


def test_condcheck_write_report_is_the_reports_function():
    from reports.condition_report import write_report
    assert condcheck.write_report is reports.write_report is write_report


def test_importing_condcheck_loads_neither_reports_nor_matplotlib():
    code = "import sys, condcheck; print(sorted(m for m in ('reports', 'matplotlib') if m in sys.modules))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, check=True, text=True)
    assert out.stdout.strip() == "[]"


def test_only_the_command_line_of_condcheck_and_conditions_imports_reports():
    importers = sorted(str(p.relative_to(ROOT)) for name in ("condcheck", "conditions")
                       for p in PACKAGES[name].rglob("*.py")
                       if any(m == "reports" or m.startswith("reports.") for m in _imports(p)))
    assert importers == ["condcheck/cli.py"]


def test_reports_never_imports_the_command_line():
    for p in PACKAGES["reports"].rglob("*.py"):
        assert "condcheck.cli" not in set(_imports(p)), p
