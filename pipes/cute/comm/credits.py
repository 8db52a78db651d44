"""Credits: the receiver says it has consumed a launch, so the sender's next launch may overwrite it.

Epochs alone make back-to-back launches *distinguishable*; they do not stop launch ``e`` from
overwriting a tile the receiver is still reading from launch ``e − 1``. So the receiver writes, per
buffer slot, the last epoch it consumed (``grant``), and the sender waits for
``reached(credit, previous(epoch))`` before its first write of the slot (``wait``). A fresh credit (0)
has reached the epoch before :data:`pipes.epoch.FIRST`, so the first launch waits for nothing.

Use (inside ``@cute.jit``; ``uint32`` words in memory the receiver can write)::

    credits = Credits(credits_ptr, scope="sys")
    credits.wait(slot, epoch)       # whole warp: every lane polls ld.acquire.sys; bounded, then trap
    ...                              # overwrite the slot
    credits.grant(slot, epoch)      # a device-side receiver: whole warp, fence + st.release

A host receiver grants from Python (:meth:`pipes.comm.Receiver.grant`).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

from ...epoch import previous, reached
from ..barriers import trap
from .flags import ReadyFlags
from .scope import check_scope

#: ``nanosleep`` between polls of a credit (a receiver that is behind is usually far behind).
CREDIT_POLL_NS = 256
#: A credit not granted after this long traps (the receiver stopped consuming).
CREDIT_TIMEOUT_NS = 10_000_000_000


class Credits:
    """``uint32`` credit words at ``credits``, acquired and granted at ``scope``."""

    def __init__(self, credits: cute.Pointer, scope: str = "sys", name: str = "credits") -> None:
        self.credits = credits
        self.scope = check_scope(scope, "Credits.scope")
        self.name = name

    # DSL protocol: a view used inside a dynamic loop or branch is rebuilt around the same pointer.
    def __extract_mlir_values__(self) -> list[Any]:
        return [self.credits]

    def __new_from_mlir_values__(self, values: list[Any]) -> Credits:
        return Credits(values[0], self.scope, self.name)

    @cute.jit
    def wait(self, slot: Any, epoch: Any, timeout_ns: cutlass.Constexpr[int] = CREDIT_TIMEOUT_NS) -> None:
        """Until the receiver consumed ``slot`` of the launch before ``epoch`` (every lane polls, so each
        lane's later stores are ordered after the receiver's reads). Traps after ``timeout_ns``."""
        want = previous(Int32(epoch))
        got = self._load(slot)
        if cutlass.const_expr(timeout_ns == 0):
            while not reached(got, want):
                nanosleep(CREDIT_POLL_NS)
                got = self._load(slot)
        else:
            if not reached(got, want):
                start = cute.arch.globaltimer()
                while not reached(got, want):
                    if cute.arch.globaltimer() - start > Int64(timeout_ns):
                        trap()
                    nanosleep(CREDIT_POLL_NS)
                    got = self._load(slot)

    @cute.jit
    def grant(self, slot: Any, epoch: Any) -> None:
        """The device-side receiver consumed ``slot`` of launch ``epoch`` (whole warp, after its reads)."""
        ReadyFlags(self.credits, self.scope, self.name).publish(slot, epoch)

    @cute.jit
    def _load(self, slot: Any) -> Int32:
        return Int32(cute.arch.load(self.credits + slot, cutlass.Uint32, sem="acquire", scope=self.scope))


__all__ = ["CREDIT_POLL_NS", "CREDIT_TIMEOUT_NS", "Credits"]
