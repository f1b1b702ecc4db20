"""Parameter crosses whose default-suite part is a chosen subset: every pair runs under ``-m slow``, the
pairs in ``default`` also in the default suite (which must stay under 8 minutes on 2 cores)."""
import pytest


def cross(firsts, seconds, default):
    """Every (a, b) of ``firsts`` x ``seconds`` as a pytest param; those not in ``default`` marked slow."""
    default = set(default)
    unknown = default - {(a, b) for a in firsts for b in seconds}
    if unknown:
        raise ValueError(f"default pairs outside the cross: {sorted(unknown)}")
    return [pytest.param(a, b, id=f"{a}-{b}", marks=() if (a, b) in default else pytest.mark.slow)
            for a in firsts for b in seconds]
