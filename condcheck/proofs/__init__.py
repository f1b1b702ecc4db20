"""Proofs a kernel checks: Coq developments (Flocq + Interval + Coquelicot) of condcheck's claims.

``prove(activation, format, out)`` checks the pair, then writes a Coq development proving what its
certificate says; ``prove_certificate(cert, out)`` does it for a certificate.  See
:mod:`condcheck.proofs.development` for what a development holds and :mod:`condcheck.proofs.coqrun`
for running Coq on it.
"""

__all__ = ["prove", "prove_certificate", "prove_network"]


def __getattr__(name):
    # lazy: importing condcheck.proofs (for the CLI's command list) must not import the generator
    if name in ("prove", "prove_certificate"):
        from . import api
        return getattr(api, name)
    if name == "prove_network":
        from . import network_proof
        return network_proof.prove_network
    raise AttributeError(f"module 'condcheck.proofs' has no attribute {name!r}")
