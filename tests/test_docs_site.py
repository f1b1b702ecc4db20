"""The docs site: it builds, it points only inside the repository, its generated matrix is current, and
its field tables list exactly the fields condcheck writes."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def _gen_matrix():
    spec = importlib.util.spec_from_file_location("gen_matrix", DOCS / "gen_matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _prose(text: str) -> str:
    """A page without its fenced blocks (which hold condcheck's real output, not the page's own words)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


# ---- the site -----------------------------------------------------------------------------------------
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (pip install -e '.[docs]')")
def test_the_site_builds_with_mkdocs_in_strict_mode(tmp_path):
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path)],
                       cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "semantics" / "index.html").exists()


def test_every_page_of_docs_is_in_the_site_navigation():
    nav = (REPO / "mkdocs.yml").read_text()
    assert [p.name for p in PAGES if p.name not in nav] == []


def test_the_readme_links_to_files_that_exist_in_the_repository():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text())
    assert links
    assert [link for link in links if not link.startswith("http") and not (REPO / link).exists()] == []


def test_no_page_points_outside_the_repository_or_cites_the_specification_by_section():
    for page in [REPO / "README.md", REPO / "mkdocs.yml"] + PAGES:
        text = page.read_text()
        assert "../shared" not in text, page.name
        assert not re.search(r"SPEC\.md|SPEC section|SPEC \d", _prose(text)), page.name


# ---- the generated matrix -----------------------------------------------------------------------------
def test_the_matrix_page_agrees_with_a_fresh_check_on_every_format_of_at_most_16_bits():
    from condcheck.formats import get_format
    from condcheck.matrix import MATRIX_FORMATS, cell, verdict_matrix
    gm = _gen_matrix()
    small = tuple(f for f in MATRIX_FORMATS if get_format(f).bits <= 16)
    results, _ = verdict_matrix(formats=small)
    page = gm.table_cells(gm.PAGE.read_text())
    assert {k: page[k] for k in results} == {k: cell(r) for k, r in results.items()}


@pytest.mark.slow
def test_the_matrix_page_is_exactly_what_the_generator_writes_now():
    gm = _gen_matrix()
    text = gm.PAGE.read_text()
    assert gm.splice(text, gm.generated_text(gm.compute())) == text


# ---- the field tables of docs/file-formats.md ---------------------------------------------------------
def _documented_fields() -> dict:
    """{section heading: set of field names} from the tables under the '### ...' headings."""
    out, heading = {}, None
    for line in (DOCS / "file-formats.md").read_text().splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
        elif heading and line.startswith("| `"):
            first = line.split("|")[1]
            out.setdefault(heading, set()).update(re.findall(r"`([^`]+)`", first))
    return out


def _keys(dicts) -> set:
    return set().union(*(d.keys() for d in dicts))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Files condcheck really writes: network files (dense and sparse layers) and certificates."""
    import mpmath

    from condcheck import Claim, Layer, Network, check_activation, save_network
    from condcheck.activations import make_activation

    folder = tmp_path_factory.mktemp("written")
    net = Network("float8_e4m3", "relu", [Layer(np.zeros((1025, 1025)), np.zeros(1025)),
                                          Layer(np.ones((1, 1025)), [0.0])])
    claim = Claim(5, points=[[0.0] * 1025], values=[0.0], upstream=[1.0], gradients=[[0.0] * 1025])
    save_network(folder / "net.json", net, claim)
    network = json.loads((folder / "net.json").read_text())
    callable_act = make_activation("doc_test_atan", function=mpmath.atan, derivative=lambda t: 1 / (1 + t * t))
    certs = [check_activation(*args, **kw).to_certificate() for args, kw in [
        (("gelu", "float8_e4m3"), {}),
        (("relu", "float8_e4m3"), {}),                              # Condition 3 route (b)
        (("relu", "float32"), {}),                                  # a symbolic tail cover
        (("sigmoid", "float4_e2m1fn"), {"method": "symbolic"}),     # refutations of one value
        (("gelu", "b3_2"), {"method": "symbolic"}),                 # a pair refutation
        ((callable_act, "float6_e3m2fn"), {})]]                     # sigma_source
    return network, certs


def test_the_network_file_fields_are_the_documented_ones(written):
    network, _ = written
    doc = _documented_fields()
    assert doc["Network file fields"] == set(network)
    assert doc["Layer fields"] == _keys(network["layers"])
    assert doc["Claim fields"] == set(network["claim"])


def test_the_certificate_fields_are_the_documented_ones(written):
    _, certs = written
    doc = _documented_fields()
    conditions = [c["conditions"][k] for c in certs for k in "123"]
    assert doc["Certificate fields"] == _keys(certs)
    assert doc["Condition record fields"] == _keys(conditions)
    witnesses = {k: [c["conditions"][k]["witness"] for c in certs if c["conditions"][k]["witness"]] for k in "123"}
    for k in "123":
        assert doc[f"Condition {k} witness fields"] == _keys(witnesses[k]), k
    values = [v for w in witnesses["2"] for v in w.values() if isinstance(v, dict)]
    assert doc["Value record"] == _keys(values)
    counter = [c["counterexample"] for c in conditions if c["counterexample"]]
    refutations = [c["refutation"] for c in counter if "refutation" in c]
    assert len(refutations) >= 4
    assert doc["Counterexample fields"] == {"refutation"} | _keys(refutations)


def test_every_file_the_current_pages_name_exists():
    """Paths such as `condcheck/rounding.py` in README.md and docs/ (the history pages excepted: they
    name files as they were) must exist, so that a moved module shows up here."""
    pattern = re.compile(r"`((?:condcheck|conditions|reports|tests|benchmarks|examples|docs)/[\w./-]*)`")
    missing = []
    for page in [REPO / "README.md"] + [p for p in PAGES if "history" not in p.name]:
        for path in pattern.findall(page.read_text()):
            if not (REPO / path.rstrip("/")).exists():
                missing.append(f"{page.name}: {path}")
    assert missing == []
