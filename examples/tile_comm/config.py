"""What the communication warp does: the transport, its memory scope, the hand-off ring's depth.

A :class:`CommConfig` is static (it changes the compiled code); the destination and flag pointers, the
launch epoch and the debugging knobs are run-time arguments (:mod:`tile_comm.args`). Transports:

* ``host``  — page-locked host memory mapped into the device; ready flags released at **system** scope
  (the reader is a CPU thread).
* ``local`` — a second buffer in this GPU's memory (the stand-in for a peer GPU); flags released at
  **GPU** scope (the reader is another kernel or a later one on this device).
* ``none``  — the communication warp waits for each tile and releases it, moving nothing: the notify
  machinery alone, to measure what it costs.
* ``peer``  — another GPU's memory through ``torch.distributed`` symmetric memory (``pipes.comm.PeerChannel``;
  examples/tp_gemm_rs.py): the same code as ``host`` (a destination pointer, a flag pointer, system scope),
  other pointers.

The scope is data of the transport, not a code path: :attr:`CommConfig.scope` picks the ``fence`` and
the ``st.release`` modifiers, nothing else differs between ``host``, ``local`` and ``peer``.

Who moves the bytes (:class:`Engine`): ``sm`` — the communication warp copies each tile with loads and
stores; ``copy`` (``host``, ``local``, ``peer``) — the communication warp counts each finished tile into its *step*
(``pipes.tile_order.TileOrder.step``) with a system-scope release, and the GPU's copy engines ship
each step as one DMA as soon as its count is complete (``tile_comm.copy_engine``): the SMs never touch
PCIe, so the GEMM's mainloop runs undisturbed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


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


class Engine(str, enum.Enum):
    SM = "sm"
    COPY = "copy"


#: Transports this example implements (``peer`` runs through :mod:`tile_comm.peer`, two GPUs).
IMPLEMENTED = (Transport.HOST, Transport.LOCAL, Transport.NONE, Transport.PEER)
#: ``pace_ns`` each transport gets unless told otherwise: pushing to pinned host memory at full speed
#: slows the GEMM's mainloop (H100, measured 2026-11-23: 4096×4096×16384 E 0.21 unpaced, 0.35 at 2000 ns,
#: 0.45 at 4000 ns); device-memory pushes do not interfere.
DEFAULT_PACE_NS: dict[Transport, int] = {Transport.HOST: 4000, Transport.LOCAL: 0, Transport.NONE: 0, Transport.PEER: 0}
#: ``unroll`` each transport gets unless told otherwise. ``local``: 2, measured on the H100 (2026-11-24,
#: 8192³, the fused kernel against 'none' in paired rounds): unroll 4 cost +3.7 … +4.2 %, unroll 2
#: +1.1 … +2.1 %, unroll 1 +2.7 %; pacing the copy made it worse (+5.5 … +7.7 %): what slows the GEMM
#: is how long the communication warp stays busy beside the math warps, not how fast it writes.
DEFAULT_UNROLL: dict[Transport, int] = {Transport.HOST: 4, Transport.LOCAL: 2, Transport.NONE: 4, Transport.PEER: 4}
#: ``step_rows`` with the copy engine unless told otherwise: raster-band rows per copy (fewer copies and
#: flags; the first wave finishes several rows at once). Host: two, measured on the H100 (2026-11-24) at
#: 4096×4096×16384 E 0.65 → 0.71, S 1.42 → 1.48 (4 rows: 0.70 / 1.49), at 8192×8192×16384 unchanged.
#: Peer: up to four where the row blocks hold them (``tile_comm.peer.step_rows_for``): on 4×H200
#: (2026-11-28, one copy stream) 8192²×2048 403 → 382 µs, 8192²×4096 413 → 398, alike elsewhere; on 2×H200
#: alike (278 → 273 at 8192²×2048).
DEFAULT_STEP_ROWS: dict[Transport, int] = {Transport.HOST: 2, Transport.LOCAL: 1, Transport.NONE: 1, Transport.PEER: 4}
#: Copy streams the reduce-scatter's steps go over unless told otherwise (``tile_comm.peer``). One: a rank
#: then sends to one peer at a time at the link's rate (4×H200, 2026-11-28: 96 MiB to three peers in 16 MiB
#: copies, one stream 318 GB/s per GPU, two 278; the reduce-scatter ran alike on one and two streams with
#: 2-band steps on 2 and 4 GPUs).
PEER_COPY_STREAMS = 1
#: Which engine ships each transport's tiles by default (``copy`` exists for every transport but ``none``;
#: ``peer`` picks its engine in :class:`tile_comm.peer.TensorParallelGemmRS`).
DEFAULT_ENGINE: dict[Transport, Engine] = {
    Transport.HOST: Engine.COPY,
    Transport.LOCAL: Engine.SM,
    Transport.NONE: Engine.SM,
    Transport.PEER: Engine.SM,
}

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
    ``ship_blocks``: C's rows are cut into this many equal blocks and every block but the last is shipped
    (1: every tile). The reduce-scatter over ``ship_blocks`` GPUs (:mod:`tile_comm.peer`) orders A's rows
    so that the blocks the other GPUs own come first and this GPU's own block last; that one stays home.
    ``engine``: ``sm`` (the warp copies) or ``copy`` (the warp counts tiles into steps and the copy
    engines ship each complete step; not ``none``). ``copy_streams``: how many streams the copy
    engine's steps alternate over (each step waits for its count, copies, then raises its ready flag;
    a second stream's copy hides the first one's wait-and-flag gap).
    ``adds_received``: the reduce-scatter's owner side in the epilogue (``peer`` with the copy engine and
    ``ship_blocks ≥ 2`` only): before storing a tile of its own row block, the math warpgroups wait for the
    flags of the step that every other GPU's copy engine raises in this GPU's inbox, then add those
    ``ship_blocks − 1`` partials of the tile to the accumulators; the stored C is then the reduced block.
    ``copy_spread``: how the copy engine deals its steps over the streams (``pipes.comm.SPREADS``):
    ``steps`` round-robin in walk order, ``targets`` each receiving GPU its own streams.
    ``step_rows``: band rows (cluster rows of the GEMM's raster band) per copy-engine step
    (``TileOrder.step_depth``): fewer, larger copies and flags. Each copy costs the copy engine ~2.6 µs
    and each flag ~1.7–2.2 µs beyond the bytes (2×H200, 16 × 4 MiB over NVLink in 250 µs vs one 64 MiB
    copy in 175 µs); with a full-width band the first wave finishes two rows of 128-column tiles at once
    anyway, so 2 rows per step cost the first copy nothing.
    ``copy_sizes``: steps per copy as they come (``pipes.comm.copy_groups``: (1,) a copy per step; a growing
    schedule such as (1, 2, 4) ships the first rows at once and the rest in larger copies, every step keeping
    its flag); with ``copy_spread`` ``steps`` only.
    """

    transport: Transport = Transport.HOST
    slots: int = 2
    lag: int = 0
    unroll: int = 4
    pace_ns: int = 0
    ship_blocks: int = 1
    engine: Engine = Engine.SM
    copy_streams: int = 2
    adds_received: bool = False
    step_rows: int = 1
    copy_spread: str = "steps"
    copy_sizes: tuple[int, ...] = (1,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "transport", transport(self.transport))
        try:
            object.__setattr__(self, "engine", Engine(self.engine))
        except ValueError:
            raise ValueError(
                f"CommConfig.engine = {self.engine!r} is invalid: allowed {[e.value for e in Engine]}"
            ) from None
        if self.engine is Engine.COPY and self.transport is Transport.NONE:
            raise ValueError(
                "CommConfig.engine = 'copy' is invalid with transport 'none': the copy engine ships C's steps "
                "somewhere ('host', 'local' or 'peer'); 'none' ships nothing"
            )
        if self.engine is Engine.COPY and self.transport is not Transport.PEER and self.ship_blocks != 1:
            raise ValueError(
                f"CommConfig.ship_blocks must be 1 with engine 'copy' and transport {self.transport.value!r} "
                "(every step is shipped)"
            )
        if self.adds_received and (
            self.transport is not Transport.PEER or self.engine is not Engine.COPY or self.ship_blocks < 2
        ):
            raise ValueError(
                f"CommConfig.adds_received = True is invalid with transport {self.transport.value!r}, engine "
                f"{self.engine.value!r}, ship_blocks {self.ship_blocks}: the epilogue adds what the other GPU's "
                "copy engines delivered, so it needs transport 'peer', engine 'copy' and ship_blocks ≥ 2"
            )
        for name, low, high in (
            ("slots", 1, 8),
            ("unroll", 1, 8),
            ("pace_ns", 0, 1_000_000),
            ("ship_blocks", 1, 8),
            ("copy_streams", 1, 8),
            ("step_rows", 1, 8),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"CommConfig.{name} = {value!r} is invalid: allowed an int in [{low}, {high}]")
        if self.copy_spread not in ("steps", "targets"):
            raise ValueError(f"CommConfig.copy_spread = {self.copy_spread!r} is invalid: allowed 'steps' or 'targets'")
        sizes = self.copy_sizes
        if (
            not isinstance(sizes, tuple)
            or not sizes
            or any(isinstance(z, bool) or not isinstance(z, int) or not 1 <= z <= 64 for z in sizes)
        ):
            raise ValueError(
                f"CommConfig.copy_sizes = {sizes!r} is invalid: allowed a non-empty tuple of ints in [1, 64] "
                "(steps per copy)"
            )
        if sizes != (1,) and (self.engine is not Engine.COPY or self.copy_spread != "steps"):
            raise ValueError(
                f"CommConfig.copy_sizes = {sizes} is invalid with engine {self.engine.value!r} and copy_spread "
                f"{self.copy_spread!r}: only the copy engine's steps dealt in turn are grouped (allowed (1,))"
            )
        if self.step_rows != 1 and self.engine is not Engine.COPY:
            raise ValueError(
                f"CommConfig.step_rows = {self.step_rows} is invalid with engine {self.engine.value!r}: only the "
                "copy engine ships steps (allowed 1)"
            )
        if isinstance(self.lag, bool) or not isinstance(self.lag, int) or not 0 <= self.lag <= self.slots - 1:
            raise ValueError(
                f"CommConfig.lag = {self.lag!r} is invalid: allowed an int in [0, slots-1] = [0, {self.slots - 1}]"
            )

    def shipped_rows(self, m: Any) -> Any:
        """Of C's ``m`` rows, how many leave: every block of ``ship_blocks`` but the last (all with 1)."""
        return m - m // self.ship_blocks if self.ship_blocks > 1 else m

    @property
    def scope(self) -> str | None:
        """``"sys"``, ``"gpu"`` or None (``none``: nothing is published). With the copy engine always
        ``"sys"``: the agent that reads C and raises the flags is a DMA engine, not a thread of this GPU,
        so the tile counts it waits for are released, and the flags it writes acquired, at system scope."""
        if self.engine is Engine.COPY and self.transport is not Transport.NONE:
            return "sys"
        return SCOPES[self.transport]

    @property
    def moves_data(self) -> bool:
        return self.scope is not None

    @property
    def pushes(self) -> bool:
        """The communication warp copies the tiles itself (engine ``sm`` with a transport that moves data)."""
        return self.moves_data and self.engine is Engine.SM

    @property
    def counts_steps(self) -> bool:
        """The communication warp counts tiles into steps for the copy engine (engine ``copy``)."""
        return self.engine is Engine.COPY

    @classmethod
    def default(cls, chosen: Transport | str, engine: Engine | str | None = None) -> CommConfig:
        """The transport's measured default with ``engine`` (None: the transport's own): the sm engine's
        pacing and unroll, or the copy engine's rows per step."""
        chosen = transport(chosen)
        engine = DEFAULT_ENGINE[chosen] if engine is None else engine
        if Engine(engine) is Engine.COPY:
            return cls(chosen, engine=Engine.COPY, step_rows=DEFAULT_STEP_ROWS[chosen])
        return cls(chosen, pace_ns=DEFAULT_PACE_NS[chosen], unroll=DEFAULT_UNROLL[chosen])

    def describe(self) -> str:
        scope = f", flags released at .{self.scope} scope" if self.scope else ""
        pace = f", paced {self.pace_ns} ns per step" if self.pace_ns else ""
        engine = f", shipped by the copy engine on {self.copy_streams} stream(s)" if self.counts_steps else ""
        adds = ", the epilogue adds the received partial" if self.adds_received else ""
        engine += f", {self.step_rows} band rows per step" if self.step_rows > 1 else ""
        engine += ", a stream per receiver" if self.copy_spread == "targets" else ""
        engine += f", steps per copy {','.join(map(str, self.copy_sizes))}" if self.copy_sizes != (1,) else ""
        return f"transport {self.transport.value}{scope}, {self.slots} notify slots, lag {self.lag}{pace}{engine}{adds}"
