"""Who reads a slot, and the cross-proxy fence that a generic read needs before async writes reuse it.

TMA loads and bulk stores write memory through the *async proxy*; ordinary ``ld``/``st`` instructions
use the *generic proxy*. An mbarrier release/acquire pair orders the two sides, but not across proxies:
a consumer that read a slot with ``ld.shared`` (or a global tile with ``ld.global``) and then released
it can still have those reads overtaken by the TMA that refills the slot. Measured on the H100
(tests/gpu, GEMM smoke kernel): without the fence 17-68 of 65,536 outputs per launch came out wrong —
the last reads before the release saw the next k-tile. ``fence.proxy.async`` before the release makes
the generic reads complete, in the async proxy's view, before the arrival publishes them.

wgmma and TMA/bulk copies already read through the async proxy: those consumers need no fence.
"""

from __future__ import annotations

import enum

import cutlass.cute as cute

from ..errors import SpecError
from .state import _register_static

__all__ = ["SlotReaders", "check_readers", "fence_generic_reads"]


class SlotReaders(enum.Enum):
    """How the consumers of a TMA-written slot read it."""

    GENERIC = "generic"
    """Threads read with ordinary loads (``ld.shared`` / ``ld.global``): fence before each release."""
    ASYNC = "async"
    """Only async-proxy readers (wgmma operands, TMA or bulk copies): no fence."""


_register_static(SlotReaders)  # an enum: carried through dynamic control flow as itself


def fence_generic_reads(readers: SlotReaders, space: str) -> None:
    """Before a release: order this thread's generic reads of ``space`` ("shared" or "global")
    before the async-proxy writes that may refill the slot. Emits nothing for :attr:`SlotReaders.ASYNC`.
    """
    if readers is SlotReaders.GENERIC:
        if space == "shared":
            cute.arch.fence_proxy("async.shared", space="cta")
        elif space == "global":
            cute.arch.fence_proxy("async.global")
        else:
            raise ValueError(f"fence_generic_reads(space={space!r}) is invalid: allowed 'shared' or 'global'")


def check_readers(owner: str, readers: object) -> SlotReaders:
    """``readers`` as a :class:`SlotReaders`, or a clear error."""
    if not isinstance(readers, SlotReaders):
        raise SpecError(f"{owner}.readers = {readers!r} is invalid: allowed one of {[r.name for r in SlotReaders]}")
    return readers
