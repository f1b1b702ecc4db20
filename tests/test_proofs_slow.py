"""The full sets of Coq proofs (-m slow; tests/test_proofs.py has the representative set).

Every paper activation on every named format of at most 8 bits (Conditions 1-3 or their negations) and on
every wide format (bfloat16, float16, float32, float64; GELU under its named premises), the
full d = 1 float8_e4m3 box networks of Theorem 5 for the six activations, and the full d = 1 float6_e3m2fn
box network of Theorem 7 for ReLU (every point, every upstream value; docs/proofs.md, "Times")."""
import subprocess
import sys

import pytest

from condcheck.activations import PAPER_ACTIVATIONS
from condcheck.formats import known_format_names, get_format
from condcheck.proofs import coqrun
from condcheck.proofs.api import prove

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not coqrun.coq_available(), reason="coqc / coq_makefile not on PATH")]

SMALL_FORMATS = [n for n in known_format_names() if get_format(n).bits <= 8]
WIDE_FORMATS = [n for n in known_format_names() if get_format(n).bits > 8]


@pytest.mark.parametrize("fmt", SMALL_FORMATS)
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_coq_accepts_the_certificate_of_every_paper_activation_on_every_small_format(act, fmt, tmp_path):
    r = prove(act, fmt, tmp_path / "dev", quiet=True)
    assert r.ok, r.coq.get("log", "")[-3000:]


@pytest.mark.parametrize("fmt", WIDE_FORMATS)
@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_coq_accepts_the_certificate_of_every_paper_activation_on_every_wide_format(act, fmt, tmp_path):
    r = prove(act, fmt, tmp_path / "dev", quiet=True)
    assert r.ok, r.coq.get("log", "")[-3000:]
    # only GELU carries premises (its dead tail and its values far in the tails)
    assert bool(r.hypotheses) == (act == "gelu")


def _network(tmp_path, act, fmt, theorem, domain):
    path = tmp_path / "net.json"
    args = [sys.executable, "-m", "condcheck", "construct", f"theorem{theorem}", act, fmt, "--domain", domain,
            "--dim", "1", "--targets", "random:0", "--out", str(path)]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return path


@pytest.mark.parametrize("act", PAPER_ACTIVATIONS)
def test_coq_accepts_the_full_box_theorem5_network_on_float8_e4m3(act, tmp_path):
    from condcheck.proofs.network_proof import prove_network
    r = prove_network(_network(tmp_path, act, "float8_e4m3", 5, "full"), tmp_path / "dev", quiet=True)
    assert r.ok, r.coq.get("log", "")[-3000:]



@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_coq_accepts_the_full_box_theorem7_network_on_float6_e3m2fn(act, tmp_path):
    from condcheck.proofs.network_proof import prove_network
    r = prove_network(_network(tmp_path, act, "float6_e3m2fn", 7, "full"), tmp_path / "dev", quiet=True)
    assert r.ok, r.coq.get("log", "")[-3000:]
