"""Memory scopes of a flag: who may read it, and the fence that orders a warp's data before it.

A flag published at scope ``s`` orders the publisher's earlier writes for readers inside ``s`` only:
``cta`` (another warp of this CTA), ``cluster`` (a CTA of this cluster), ``gpu`` (any kernel on this
GPU), ``sys`` (the host, another GPU, the copy engines). A reader acquires at a scope that includes the
publisher. Choosing too narrow a scope is not a slow path but a wrong one: the reader may see the flag
before the data (``pipes.check`` names it; :func:`needed_scope` gives the right one per receiver).

Backend-neutral: the device side (:mod:`pipes.cute.comm`) and the host side (:class:`pipes.comm.Receiver`)
check scopes with the same functions.
"""

from __future__ import annotations

#: Flag scopes, narrowest first (the PTX ``.cta``, ``.cluster``, ``.gpu``, ``.sys`` qualifiers).
SCOPES = ("cta", "cluster", "gpu", "sys")

#: The scope each kind of receiver needs: a host thread, another GPU or a copy engine sits outside the
#: GPU (system scope); another kernel of this GPU reads at GPU scope.
RECEIVER_SCOPES = {"host": "sys", "peer": "sys", "copy_engine": "sys", "device": "gpu"}


def check_scope(scope: object, what: str = "scope") -> str:
    """``scope`` if it is one of :data:`SCOPES`; ``ValueError`` naming the allowed ones otherwise."""
    if scope not in SCOPES:
        raise ValueError(f"{what} = {scope!r} is invalid: allowed one of {SCOPES}")
    return scope  # type: ignore[return-value]


def needed_scope(receiver: str) -> str:
    """The narrowest scope a flag read by ``receiver`` (``host``, ``peer``, ``copy_engine``, ``device``) needs."""
    if receiver not in RECEIVER_SCOPES:
        raise ValueError(f"receiver = {receiver!r} is invalid: allowed one of {tuple(RECEIVER_SCOPES)}")
    return RECEIVER_SCOPES[receiver]


def check_reaches(scope: str, receiver: str) -> None:
    """``ValueError`` when flags released at ``scope`` cannot order data for ``receiver``."""
    needed = needed_scope(receiver)
    if SCOPES.index(check_scope(scope)) < SCOPES.index(needed):
        raise ValueError(
            f"scope = {scope!r} is too narrow for a {receiver} receiver: its reader is outside the "
            f"{scope!r} scope, so a release there orders nothing for it (allowed {needed!r} or wider)"
        )


__all__ = ["RECEIVER_SCOPES", "SCOPES", "check_reaches", "check_scope", "needed_scope"]
