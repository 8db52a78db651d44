"""What the communication warp does: the transport, its memory scope, the hand-off ring's depth.

A :class:`CommConfig` is static (it changes the compiled code); the destination and flag pointers, the
launch epoch and the debugging knobs are run-time arguments (:mod:`tile_comm.args`). Transports:

* ``host``  — page-locked host memory mapped into the device; ready flags released at **system** scope
  (the reader is a CPU thread).
* ``local`` — a second buffer in this GPU's memory (the stand-in for a peer GPU); flags released at
  **GPU** scope (the reader is another kernel or a later one on this device).
* ``none``  — the communication warp waits for each tile and releases it, moving nothing: the notify
  machinery alone, to measure what it costs.
* ``peer``  — reserved for another GPU's memory through ``torch.distributed`` symmetric memory (issue 12):
  the same code as ``host`` (a destination pointer, a flag pointer, system scope), other pointers.

The scope is data of the transport, not a code path: :attr:`CommConfig.scope` picks the ``fence`` and
the ``st.release`` modifiers, nothing else differs between ``host``, ``local`` and ``peer``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Transport(str, enum.Enum):
    HOST = "host"
    LOCAL = "local"
    NONE = "none"
    PEER = "peer"


#: The memory scope at which each transport's ready flags are released (None: no flags).
SCOPES: dict[Transport, str | None] = {
    Transport.HOST: "sys",
    Transport.LOCAL: "gpu",
    Transport.NONE: None,
    Transport.PEER: "sys",
}
#: Transports this example implements (``peer`` runs through :mod:`tile_comm.peer`, two GPUs).
IMPLEMENTED = (Transport.HOST, Transport.LOCAL, Transport.NONE, Transport.PEER)
#: ``pace_ns`` each transport gets unless told otherwise: pushing to pinned host memory at full speed
#: slows the GEMM's mainloop (H100, run 8 of 2026-11-23: 4096×4096×16384 E 0.21 unpaced, 0.35 at 2000 ns,
#: 0.45 at 4000 ns); device-memory pushes do not interfere.
DEFAULT_PACE_NS: dict[Transport, int] = {Transport.HOST: 4000, Transport.LOCAL: 0, Transport.NONE: 0, Transport.PEER: 0}

#: 16-byte vectors: the communication warp moves 8 bf16/fp16 values per lane per access.
VECTOR_ELEMENTS = 8


def transport(value: object) -> Transport:
    """``value`` as a :class:`Transport`; ``ValueError`` naming the allowed ones otherwise."""
    try:
        chosen = Transport(value)
    except ValueError:
        raise ValueError(
            f"transport = {value!r} is invalid: allowed {[t.value for t in IMPLEMENTED]} "
            "('peer' needs two GPUs: examples/tp_gemm_rs.py)"
        ) from None
    if chosen not in IMPLEMENTED:
        allowed = [t.value for t in IMPLEMENTED]
        raise ValueError(f"transport = {value!r} is not implemented; allowed {allowed}")
    return chosen


@dataclass(frozen=True)
class CommConfig:
    """The communication warp's static choices.

    ``slots``: stages of the store→notify ring between the storing warp and the communication warp (the
    communication warp may fall this many tiles behind before the epilogue waits for it).
    ``lag``: notifications held back by the storing warp (``StoreNotifyPipeline.lag``). 0 here: each
    tile's bulk groups are waited for at its own commit and the communication warp hears of it at once;
    see docs/epilogue-comm.md for why a larger lag only delays the last tiles' shipping in this kernel.
    ``unroll``: 16-byte loads each lane keeps in flight while copying (registers: 4 per load, and the
    warp runs under ``setmaxnreg 40``).
    ``pace_ns``: a ``nanosleep`` after each unrolled copy step (0: none). Measured on the H100: 132
    warps pushing to pinned host memory at full speed back the PCIe writes up into the memory system and
    slow the GEMM's mainloop from ~170 to ~290 µs per tile; pacing spreads a tile's push over the next
    tile's mainloop so the link stays busy without the queue.
    ``ship_blocks``: C's rows are cut into this many equal blocks and only block 0's tiles are shipped (1:
    every tile). The two-GPU reduce-scatter (:mod:`tile_comm.peer`) orders A's rows so that block 0 is
    the block the other GPU owns; the rest stays home.
    """

    transport: Transport = Transport.HOST
    slots: int = 2
    lag: int = 0
    unroll: int = 4
    pace_ns: int = 0
    ship_blocks: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "transport", transport(self.transport))
        for name, low, high in (("slots", 1, 8), ("unroll", 1, 8), ("pace_ns", 0, 1_000_000), ("ship_blocks", 1, 8)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"CommConfig.{name} = {value!r} is invalid: allowed an int in [{low}, {high}]")
        if isinstance(self.lag, bool) or not isinstance(self.lag, int) or not 0 <= self.lag <= self.slots - 1:
            raise ValueError(
                f"CommConfig.lag = {self.lag!r} is invalid: allowed an int in [0, slots-1] = [0, {self.slots - 1}]"
            )

    @property
    def scope(self) -> str | None:
        """``"sys"``, ``"gpu"`` or None (``none``: nothing is published)."""
        return SCOPES[self.transport]

    @property
    def moves_data(self) -> bool:
        return self.scope is not None

    @classmethod
    def default(cls, chosen: Transport | str) -> CommConfig:
        """The transport's measured default (its pacing)."""
        chosen = transport(chosen)
        return cls(chosen, pace_ns=DEFAULT_PACE_NS[chosen])

    def describe(self) -> str:
        scope = f", flags released at .{self.scope} scope" if self.scope else ""
        pace = f", paced {self.pace_ns} ns per step" if self.pace_ns else ""
        return f"transport {self.transport.value}{scope}, {self.slots} notify slots, lag {self.lag}{pace}"
