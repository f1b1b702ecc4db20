"""The constructors build the same networks, bit for bit, as when the hashes were recorded.

A change to the recorded hashes (tests/data/network_hashes.json) is a change of the networks: it is made
only when an issue asks for new networks (``python3 -m tests.network_hashes --record CASE``)."""
import pytest

from network_hashes import CASES, network_hash, recorded

_RECORDED = recorded()


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if slow else n
                                  for n, (_, slow) in CASES.items()])
def test_the_constructed_network_has_its_recorded_hash(name):
    assert name in _RECORDED, f"no recorded hash for {name}: record it with python3 -m tests.network_hashes --record {name}"
    assert network_hash(CASES[name][0]()) == _RECORDED[name]


def test_every_recorded_hash_has_a_case():
    assert set(_RECORDED) <= set(CASES)
