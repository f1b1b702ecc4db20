"""Proofs a kernel checks: Coq developments (Flocq + Interval + Coquelicot) of condcheck's claims.

``prove(activation, format, out)`` checks the pair, then writes a Coq development proving what its
certificate says; ``prove_certificate(cert, out)`` does it for a certificate.  See
:mod:`condcheck.proofs.development` for what a development holds and :mod:`condcheck.proofs.coqrun`
for running Coq on it.
"""
