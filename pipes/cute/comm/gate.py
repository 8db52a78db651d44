"""The load warp's gate: wait for the chunks of A a tile needs before its first TMA load of them.

In an all-gather GEMM the rows of A that other ranks hold arrive while the kernel runs, pushed in chunks
(:class:`pipes.chunks.ChunkPlan`), each with a ready flag in this GPU's memory. Before the load warp
issues the first TMA load of output tile row ``tm`` it calls ``gate = gate.wait_tile(tm)``: for every
chunk the tile's rows touch that another rank pushes and this warp has not passed yet in this launch,
wait for its flag (:meth:`ReadyFlags.wait`, bounded: a chunk that never comes traps instead of hanging),
then fence. Use (inside ``@cute.jit``, the whole load warp)::

    spec = GateSpec(ChunkPlan(rows=m, world=2, chunk_rows=256), tile_m=128)    # static: trace time
    gate = ChunkGate.start(spec, flags_ptr, rank, value)  # value: parity_token(epoch) (copy engine)
    for linear in cutlass.range(...):                     # the persistent tile loop
        tm, tn = order.cta_tile(...)
        gate = gate.wait_tile(tm)                         # once per chunk per launch, then a no-op
        producer = load_k_tiles(..., tm, tn, ...)         # the TMA loads of A's rows

**Why an acquire and a proxy fence.** The pushing side raises a chunk's flag only after the chunk's
bytes are visible system-wide: the copy engine's flag write carries a system-scope memory barrier
(:class:`pipes.comm.ChunkPusher`), an SM copy publishes with ``fence.acq_rel.sys`` + ``st.release.sys``
(:meth:`ReadyFlags.publish`). The writer is another GPU, so only a *system*-scope acquire synchronizes
with it: each lane polls ``ld.acquire.sys`` (a ``.gpu`` acquire orders nothing against another GPU's
release). That acquire orders the chunk's bytes before this thread's later *generic-proxy* accesses;
a TMA load reads global memory through the *async proxy*, and the PTX memory model orders accesses of
different proxies only through a proxy fence. So after its acquires each lane runs
``fence.proxy.async.global`` (global memory, where the chunk is; the ``.shared`` form would not cover
it) before it issues any TMA load: the TMA then reads the chunk the flag announced, not what an earlier
launch left in the same rows. A chunk once passed needs neither again in this launch: both the acquire
and the fence are already before every later instruction of the thread. Every lane acquires and fences,
so whichever lane the TMA copy elects is covered.

The passed chunks are remembered in 64-bit registers (one bit per chunk, at most :data:`MAX_CHUNKS`
chunks), carried through the tile loop with the gate; the rank's own chunks are never waited for (its
row block is in place before the launch, in stream order).

**Did the kernel wait?** With ``GateSpec(record_waits=True)`` the flags buffer holds two more words per
chunk after the flags (:attr:`GateSpec.flag_words`): the longest any load warp spent at the chunk's gate
(ns, ``red.max``) and how many load warps spent longer than :data:`WAITED_NS` there (``red.add``). The
host zeroes them before the launches it wants to read (:func:`gate_waits` reads them back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32

from ...chunks import ChunkPlan
from ..state import TraceStatic
from .flags import ReadyFlags
from .scope import check_scope

#: Bits per register word of the passed-chunk set.
WORD_BITS = 64
#: The most chunks a gate remembers (8 registers of 64 bits); larger chunks cost nothing on the load side.
MAX_CHUNKS = 8 * WORD_BITS
#: With ``record_waits``, a gate passage counted as a wait once it took longer than this (a flag already
#: raised costs one system-scope load).
WAITED_NS = 1_000
#: A chunk not seen after this long traps. Longer than a flag wait's: a peer's launch may start late (its
#: host still compiling or queueing), so every rank should also pass a barrier before its first launch.
GATE_TIMEOUT_NS = 10_000_000_000


@dataclass(frozen=True)
class GateSpec(TraceStatic):
    """The static half of a :class:`ChunkGate`.

    ``plan``: the gathered matrix's chunks; ``tile_m``: rows of an output tile (bounds the chunks one tile
    can touch, :meth:`ChunkPlan.max_span`); ``exact``: wait until a flag *equals* the value (the copy
    engine's parity tokens) instead of until it has *reached* it (epochs, SM pushes); ``scope``: the
    flags' scope (``sys``: the pushers are other GPUs); ``timeout_ns``: a chunk not seen after this long
    traps; ``report``: print the flag and value before trapping (leave False in a kernel that issues
    wgmma: ``printf`` makes ptxas serialize every wgmma); ``name``: in the timeout message;
    ``record_waits``: count the waits after the flags (the module docstring, "Did the kernel wait?").
    """

    plan: ChunkPlan
    tile_m: int
    exact: bool = True
    scope: str = "sys"
    timeout_ns: int = GATE_TIMEOUT_NS
    report: bool = False
    name: str = "chunks"
    record_waits: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.record_waits, bool):
            raise ValueError(f"GateSpec.record_waits = {self.record_waits!r} is invalid: allowed True or False")
        if not isinstance(self.plan, ChunkPlan):
            raise ValueError(f"GateSpec.plan must be a pipes.chunks.ChunkPlan, got {type(self.plan).__name__}")
        if isinstance(self.tile_m, bool) or not isinstance(self.tile_m, int) or self.tile_m < 1:
            raise ValueError(f"GateSpec.tile_m = {self.tile_m!r} is invalid: allowed an int >= 1")
        if self.plan.chunks > MAX_CHUNKS:
            raise ValueError(
                f"GateSpec: the plan has {self.plan.chunks} chunks ({self.plan.rows} rows / chunk_rows "
                f"{self.plan.chunk_rows}), more than the {MAX_CHUNKS} a gate remembers: use chunk_rows >= "
                f"{-(-self.plan.rows // MAX_CHUNKS)}"
            )
        check_scope(self.scope, "GateSpec.scope")

    @property
    def words(self) -> int:
        """64-bit registers of the passed-chunk set."""
        return -(-self.plan.chunks // WORD_BITS)

    @property
    def flag_words(self) -> int:
        """``uint32`` words the gate reads and writes at its flags pointer: a flag per chunk, and with
        ``record_waits`` the longest wait (ns) and the waiting load warps of every chunk after them."""
        return self.plan.chunks * (3 if self.record_waits else 1)

    @property
    def span(self) -> int:
        """The most chunks one tile touches: the gate's static loop bound."""
        return self.plan.max_span(self.tile_m)

    def check_tiles(self, tile_m: int, cluster_m: int = 1) -> None:
        """``ValueError`` unless a kernel of ``tile_m``-row tiles in clusters of ``cluster_m`` tile rows can wait
        at this gate: the gate counts tiles of ``tile_m`` rows, and each rank's rows are whole cluster rows of
        tiles (a cluster hanging over them would compute a tile row that walking the rank's own rows first,
        :meth:`ChunkPlan.own_rows_first`, maps onto a real one)."""
        if self.tile_m != tile_m:
            raise ValueError(f"the gate counts tiles of {self.tile_m} rows, the configuration {tile_m}")
        rows = tile_m * cluster_m
        if self.plan.rows_per_rank % rows:
            raise ValueError(
                f"each rank's {self.plan.rows_per_rank} rows must be whole cluster rows of tiles ({tile_m} × "
                f"cluster_m {cluster_m} = {rows}): a cluster hanging over the rows would compute a tile row "
                "that walking the rank's own rows first maps onto a real one"
            )


class GateArgs(NamedTuple):
    """The gate's run-time arguments, passed through the kernel untouched: ``flags`` (a ``uint32`` pointer to
    this rank's chunk flags), ``rank`` (``Int32``) and ``value`` (``Int32``: what a chunk's flag holds once
    this launch's chunk landed). On the host :meth:`pipes.comm.ChunkPusher.gate_args` builds them;
    :func:`pipes.comm.fake_gate_args` compiles without a GPU."""

    flags: Any
    rank: Any
    value: Any


class ChunkGate:
    """A load warp's view of the chunk flags at ``flags`` (``uint32`` words, one per chunk, in this GPU's
    memory): ``rank`` (this rank: its own chunks need no wait), ``value`` (what a flag holds once this
    launch's chunk landed) and the set of chunks already passed in this launch. Carried through dynamic
    loops; :meth:`wait_tile` returns the gate to carry on with."""

    def __init__(self, spec: GateSpec, flags: cute.Pointer, rank: Any, value: Any, passed: tuple[Any, ...]) -> None:
        self.spec = spec
        self.flags = flags
        self.rank = Int32(rank)
        self.value = Int32(value)
        self.passed = tuple(Int64(w) for w in passed)

    @staticmethod
    def start(spec: GateSpec, flags: cute.Pointer, rank: Any, value: Any) -> ChunkGate:
        """A gate at the start of a launch: no chunk passed yet."""
        return ChunkGate(spec, flags, rank, value, (0,) * spec.words)

    @staticmethod
    def of(spec: GateSpec, args: GateArgs) -> ChunkGate:
        """:meth:`start` from the kernel's :class:`GateArgs`."""
        return ChunkGate.start(spec, args.flags, args.rank, args.value)

    # DSL protocol: the pointer, the rank, the value and the passed set travel through dynamic loops.
    def __extract_mlir_values__(self) -> list[Any]:
        values = [*cutlass.extract_mlir_values(self.flags)]
        for v in (self.rank, self.value, *self.passed):
            values.extend(cutlass.extract_mlir_values(v))
        return values

    def __get_mlir_types__(self) -> list[Any]:
        return [v.type for v in self.__extract_mlir_values__()]

    def __new_from_mlir_values__(self, values: list[Any]) -> ChunkGate:
        width = len(cutlass.extract_mlir_values(self.flags))
        flags = cutlass.new_from_mlir_values(self.flags, values[:width])
        rest = values[width:]
        return ChunkGate(self.spec, flags, Int32(rest[0]), Int32(rest[1]), tuple(Int64(v) for v in rest[2:]))

    @cute.jit
    def wait_tile(self, tm: Any) -> ChunkGate:
        """Wait for every chunk output tile row ``tm`` needs that another rank pushes and this warp has not
        passed in this launch, then ``fence.proxy.async.global``; returns the gate with them passed. Call
        from the whole load warp before the tile's first TMA load of A."""
        spec = self.spec
        plan = spec.plan
        first, end = plan.tile_span(tm, spec.tile_m)
        words = list(self.passed)
        flags = ReadyFlags(self.flags, spec.scope, spec.name)
        for i in cutlass.range_constexpr(spec.span):
            chunk = first + i
            word, bit = chunk // WORD_BITS, Int64(chunk % WORD_BITS)
            held = Int64(0)
            for w in cutlass.range_constexpr(spec.words):
                held = held | cutlass.select_(word == w, words[w], Int64(0))
            fresh = (held >> bit) & Int64(1) == Int64(0)
            need = (chunk < end) & (plan.owner(chunk) != self.rank) & fresh
            if need:
                start = cute.arch.globaltimer()
                flags.wait(chunk, self.value, start, spec.timeout_ns, exact=spec.exact, report=spec.report)
                if cutlass.const_expr(spec.record_waits):
                    _record_wait(self.flags, plan.chunks, chunk, cute.arch.globaltimer() - start)
                # The acquire above orders the chunk for this thread's generic proxy only; the TMA loads
                # that follow read it through the async proxy (see the module docstring).
                cute.arch.fence_proxy("async.global")
            for w in cutlass.range_constexpr(spec.words):
                words[w] = cutlass.select_(need & (word == w), words[w] | (Int64(1) << bit), words[w])
        return ChunkGate(spec, self.flags, self.rank, self.value, tuple(words))


@cute.jit
def _record_wait(flags: cute.Pointer, chunks: int, chunk: Any, waited_ns: Any) -> None:
    """Lane 0: the chunk's longest wait (``red.max``) and, past :data:`WAITED_NS`, one more waiting warp."""
    if cute.arch.lane_idx() == 0:
        ns = Uint32(cutlass.min(waited_ns, Int64(0xFFFFFFFF)))
        cute.arch.red(flags + chunks + chunk, ns, op="max", dtype=Uint32, sem="relaxed", scope="gpu")
        if waited_ns > Int64(WAITED_NS):
            cute.arch.red(flags + 2 * chunks + chunk, Uint32(1), op="add", dtype=Uint32, sem="relaxed", scope="gpu")
    cute.arch.sync_warp()


def gate_waits(words: Any, chunks: int) -> list[tuple[float, int]]:
    """Per chunk, (the longest wait in µs, the load warps that waited past :data:`WAITED_NS`) from the gate's
    flag words (a host sequence of ``3 × chunks`` ``uint32`` values, ``GateSpec(record_waits=True)``)."""
    values = [int(w) & 0xFFFFFFFF for w in words]
    if len(values) != 3 * chunks:
        raise ValueError(f"{len(values)} flag words for {chunks} chunks: a gate that records waits has {3 * chunks}")
    return [(values[chunks + c] / 1000, values[2 * chunks + c]) for c in range(chunks)]


__all__ = ["GATE_TIMEOUT_NS", "MAX_CHUNKS", "WAITED_NS", "WORD_BITS", "ChunkGate", "GateArgs", "GateSpec", "gate_waits"]
