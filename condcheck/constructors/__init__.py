"""What both constructors (``theorem5``, ``theorem7``) share, below them and above ``check``:

- ``errors``: the one ``ConstructionError`` and its refusals (``ConditionFailure``, ``TargetError``);
- ``witnesses``: ``require_conditions``, the typed witnesses of Conditions 1-3 or a refusal with the reason;
- ``kit``: ``Kit``, exact rounded arithmetic and T = sigma~, T' on arrays of format values.

The paper's constants (M_sigma, H_sigma, the box, the depth bounds) are in ``condcheck.paper``.
"""
