"""TMA-load pipeline (Completion.TRANSACTION_BYTES), with cluster multicast release.

Use::

    spec = PipelineSpec("mainloop", stages=4,
                        producer=Role("load", ArrivalUnit.ELECTED_PER_WARP, 1),
                        consumers=Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8),   # 2 warpgroups = 8 warps
                        completion=Completion.TRANSACTION_BYTES, tx_bytes=a_bytes + b_bytes)
    pipe = TmaLoadPipeline(spec, multicast=Multicast(cluster_m, cluster_n, a=cluster_n > 1, b=cluster_m > 1),
                           readers=SlotReaders.ASYNC)             # wgmma reads the stages: no proxy fence
    ...
    if layout.is_role("load"):
        p = pipe.producer()
        for k in cutlass.range(k_tiles):
            slot = p.acquire()                    # wait empty[slot], arm full[slot] with tx_bytes
            cute.copy(tma_a, gA[..., k], sA[..., slot], tma_bar_ptr=p.barrier(slot))
            cute.copy(tma_b, gB[..., k], sB[..., slot], tma_bar_ptr=p.barrier(slot))
            p.commit()                            # no code: the TMA bytes complete the phase
        p.tail()
    if layout.is_role("mma"):
        c = pipe.consumer()
        ...slot = c.wait(); wgmma on stage slot; c.release()...

Consumers that read the stage with ordinary loads (``readers=SlotReaders.GENERIC``, the default) get
a ``fence.proxy.async.shared::cta`` before each release, so the TMA that refills the slot cannot
overtake their reads (see :mod:`pipes.cute.proxy`); wgmma-only consumers pass
``readers=SlotReaders.ASYNC`` and get none.

Counts: full barrier = 1 arrival (the producer's ``arrive.expect_tx``) + ``tx_bytes`` (+ extra);
the producer role must make exactly one arrival (count=1 × THREAD or ELECTED_PER_WARP).
Empty barrier = Σ consumer arrivals, each multiplied by its ``peers``.

The consumer unit to use is ``ELECTED_PER_WARP`` (count = consumer warps), as the stock CUTLASS
mainloop does: each warp syncs (``bar.warp.sync``) and one lane per warp arrives. ``WARPGROUP``
makes every thread arrive — 128 arrivals per warpgroup instead of 4, and with multicast that many
*remote* arrivals per peer CTA (2 warpgroups × 2 peers: 512 per stage instead of 16), so a
multi-peer consumer with a per-thread unit draws a :class:`~pipes.errors.PipesPerformanceWarning`.

Multicast (``multicast=Multicast(cluster_m, cluster_n, a=..., b=...)``): the TMA of CTA p writes
into every CTA that shares p's A tile (same m: ``a``) and/or B tile (same n: ``b``), so p may only
refill a slot once all of those CTAs released it. Every consumer therefore releases on the empty
barrier of each peer CTA (itself included): ``peers = (a ? cluster_n : 0) + (b ? cluster_m : 0) −
(a and b ? 1 : 0)`` (1 when neither operand is multicast). The declaration derives each consumer
role's ``peers`` from it: leave ``Role(peers=...)`` at its default (a role that states a different
count is an error). ``Multicast(1, 1)`` — or any shape where nothing is shared — means no multicast,
so a kernel may build its ``Multicast`` from the cluster shape unconditionally. An ELECTED_PER_WARP
consumer warp spreads the release over lanes 0..peers-1 (one remote arrival each); other units arrive
once per peer in every arriving thread. CTA ranks follow the default cluster layout
``rank = m + n × cluster_m``.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32

from ..errors import PipesPerformanceWarning, SpecError
from ..spec import ArrivalUnit, Completion, PipelineSpec
from .barriers import MbarrierRing, arrive_as_unit
from .base import BoundPipeline, PipelineBase
from .debug import DebugConfig, TraceEvent, Tracer
from .proxy import SlotReaders, check_readers, fence_generic_reads
from .state import CuteProducer, CuteState, TraceStatic

__all__ = ["Multicast", "TmaLoadOps", "TmaLoadPipeline", "TmaLoadProducer"]

_ARMING_UNITS = (ArrivalUnit.THREAD, ArrivalUnit.ELECTED_PER_WARP)


@dataclass(frozen=True)
class Multicast(TraceStatic):
    """Cluster shape and which operands are multicast; gives each CTA's release peers.

    ``a``: the A tile is shared along a cluster row (the ``cluster_n`` CTAs of one m); ``b``: the B tile
    along a column (the ``cluster_m`` CTAs of one n). A shape where nothing is shared (``Multicast(1, 1)``,
    ``a=b=False``) is valid and means no multicast: ``peers == 1``, and ``bool(multicast)`` is False —
    ``bool`` says whether anything is multicast, so ``if cutlass.const_expr(multicast):`` reads naturally.
    """

    cluster_m: int
    cluster_n: int
    a: bool = True
    b: bool = True

    def __post_init__(self) -> None:
        for name in ("cluster_m", "cluster_n"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 16:
                raise SpecError(f"Multicast.{name} = {value!r} is invalid: allowed an int in [1, 16]")
        if self.cluster_m * self.cluster_n > 16:
            raise SpecError(
                f"Multicast cluster {self.cluster_m}×{self.cluster_n} = {self.cluster_m * self.cluster_n} CTAs "
                "is invalid: allowed at most 16 CTAs"
            )
        for name in ("a", "b"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(f"Multicast.{name} = {getattr(self, name)!r} is invalid: allowed True or False")

    def __bool__(self) -> bool:
        """Whether any operand reaches more than one CTA (``peers > 1``)."""
        return self.peers > 1

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def peers(self) -> int:
        """CTAs whose empty barrier each consumer releases (this CTA included; 1 without multicast)."""
        if not (self.a or self.b):
            return 1
        return (self.cluster_n if self.a else 0) + (self.cluster_m if self.b else 0) - (1 if self.a and self.b else 0)

    def peer_rank(self, j: Any, my_m: Any, my_n: Any) -> Any:
        """Cluster rank of peer ``j`` in [0, peers) (``j`` static or dynamic) of the CTA at (my_m, my_n)."""
        cm = self.cluster_m
        same_m = my_m + j * cm  # peers sharing my A tile: (my_m, j)
        if not (self.a or self.b):
            return my_m + my_n * cm  # only myself
        if self.a and not self.b:
            return same_m
        if self.b and not self.a:
            return j + my_n * cm  # peers sharing my B tile: (j, my_n)
        # Both: first the cluster_n CTAs of my row, then the other cluster_m-1 CTAs of my column.
        k = j - self.cluster_n
        other_m = k + _as_int(k >= my_m)
        in_row = _as_int(j < self.cluster_n)
        return in_row * same_m + (1 - in_row) * (other_m + my_n * cm)


def _as_int(flag: Any) -> Any:
    """0/1 from a Python bool (host-side use, tests) or a DSL Boolean (kernel)."""
    return int(flag) if isinstance(flag, bool) else Int32(flag)


class TmaLoadPipeline(PipelineBase):
    """Declaration of a TMA-fed pipeline: full barriers complete on transaction bytes."""

    completion = Completion.TRANSACTION_BYTES
    kind = "TmaLoadPipeline"

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        multicast: Multicast | None = None,
        extra_tx_bytes: int = 0,
        readers: SlotReaders = SlotReaders.GENERIC,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        owner = f"TmaLoadPipeline({getattr(spec, 'name', '?')!r})"
        if multicast is not None and not isinstance(multicast, Multicast):
            raise SpecError(f"{owner}.multicast = {multicast!r} is invalid: allowed None or a pipes.cute.Multicast")
        if isinstance(spec, PipelineSpec):
            spec = _with_release_peers(owner, spec, multicast)
        super().__init__(spec, suspend_waits=suspend_waits, debug=debug, tracer=tracer, trace_id=trace_id)
        self.readers = check_readers(owner, readers)
        producer = spec.producer
        if producer.unit not in _ARMING_UNITS or producer.count != 1 or producer.peers != 1:
            raise SpecError(
                f"{owner}: producer role {producer.name!r} = count={producer.count} × {producer.unit.name} × "
                f"peers={producer.peers} makes {producer.arrivals} arrival(s) per stage: allowed exactly 1 "
                "(count=1 × THREAD or ELECTED_PER_WARP, peers=1): one thread arms the full barrier with the bytes"
            )
        if isinstance(extra_tx_bytes, bool) or not isinstance(extra_tx_bytes, int) or extra_tx_bytes < 0:
            raise SpecError(f"{owner}.extra_tx_bytes = {extra_tx_bytes!r} is invalid: allowed an int >= 0")
        if spec.tx_bytes + extra_tx_bytes >= 1 << 20:
            raise SpecError(
                f"{owner}: tx_bytes + extra_tx_bytes = {spec.tx_bytes} + {extra_tx_bytes} is invalid: "
                "allowed < 2^20 (the mbarrier transaction count)"
            )
        _warn_per_thread_remote_release(owner, spec)
        self.multicast = multicast
        self.extra_tx_bytes = extra_tx_bytes

    @property
    def cluster_size(self) -> int:
        return self.multicast.cluster_size if self.multicast is not None else 1

    @property
    def remote_release(self) -> Multicast | None:
        """The multicast whose peers each release reaches, or None when releases stay in this CTA."""
        return self.multicast if self.multicast else None

    @property
    def stage_tx_bytes(self) -> int:
        return self.spec.tx_bytes + self.extra_tx_bytes

    def bind(self, base: cute.Pointer) -> TmaLoadOps:
        return TmaLoadOps(self, base)


def _with_release_peers(owner: str, spec: PipelineSpec, multicast: Multicast | None) -> PipelineSpec:
    """``spec`` with every consumer role's ``peers`` taken from ``multicast`` (the one source of truth)."""
    peers = multicast.peers if multicast is not None else 1
    roles = []
    for role in spec.consumers:
        if role.peers not in (1, peers):
            how = (
                f"{multicast!r} gives {peers} peer CTA(s)"
                if multicast is not None
                else "without multicast only this CTA releases (peers=1)"
            )
            raise SpecError(
                f"{owner}: consumer role {role.name!r} has peers={role.peers}, but {how}: leave Role.peers at 1, "
                "the declaration derives it from multicast="
            )
        roles.append(dataclasses.replace(role, peers=peers) if role.peers != peers else role)
    if all(new is old for new, old in zip(roles, spec.consumers, strict=True)):
        return spec
    return dataclasses.replace(spec, consumers=tuple(roles))


#: Units whose every executing thread arrives (no election): with peers > 1, each of them arrives remotely.
_PER_THREAD_UNITS = (ArrivalUnit.THREAD, ArrivalUnit.WARP, ArrivalUnit.WARPGROUP)


def _warn_per_thread_remote_release(owner: str, spec: PipelineSpec) -> None:
    for role in spec.consumers:
        if role.peers > 1 and role.unit in _PER_THREAD_UNITS and role.threads >= 32:
            warps = role.threads // 32
            warnings.warn(
                f"{owner}: consumer role {role.name!r} = count={role.count} × {role.unit.name} releases on "
                f"{role.peers} peer CTAs from every thread: {role.count} × {role.unit.arrivals} × {role.peers} = "
                f"{role.arrivals} remote arrivals per stage. Role({role.name!r}, ArrivalUnit.ELECTED_PER_WARP, "
                f"{warps}) makes {warps} × {role.peers} = {warps * role.peers} (one elected lane per warp per peer, "
                "as the stock CUTLASS mainloop does)",
                PipesPerformanceWarning,
                stacklevel=3,
            )


class TmaLoadProducer(CuteProducer):
    """Producer handle; ``barrier(slot)`` is the ``tma_bar_ptr`` for the stage's TMA copies."""

    def acquire(self, token: Any = None, extra_tx_bytes: Any = None) -> Any:
        """Wait for the next empty slot and arm its full barrier; returns its index.

        ``extra_tx_bytes`` (static or dynamic) adds to this stage's expected bytes, on top of the
        pipeline's ``tx_bytes + extra_tx_bytes``.
        """
        index = self.acquire_state.index
        self.ops.producer_acquire(self.acquire_state, token, extra_tx_bytes)
        self.acquire_state.advance()
        return index

    def barrier(self, slot: Any) -> cute.Pointer:
        return self.ops.full.ptr(slot)


class TmaLoadOps(BoundPipeline):
    """:class:`pipes.participants.PipelineOps` of a :class:`TmaLoadPipeline` bound to shared memory."""

    decl: TmaLoadPipeline
    producer_handle = TmaLoadProducer

    def full_barrier(self, slot: Any) -> cute.Pointer:
        return self.full.ptr(slot)

    def producer_acquire(self, state: CuteState, token: Any = None, extra_tx_bytes: Any = None) -> None:
        self.wait_unless(token, self.empty, state, self.spec.producer, "acquire")
        self.record(TraceEvent.ACQUIRE, state.index)
        nbytes = self.decl.stage_tx_bytes
        if extra_tx_bytes is not None:
            nbytes = nbytes + extra_tx_bytes
        if self.spec.producer.unit is ArrivalUnit.ELECTED_PER_WARP:
            with cute.arch.elect_one():
                self.full.arrive_expect_tx(state.index, nbytes)
        else:
            self.full.arrive_expect_tx(state.index, nbytes)

    def producer_commit(self, state: CuteState, *payload: Any) -> None:
        if payload:
            raise SpecError(f"TmaLoadPipeline {self.spec.name!r}: commit() takes no payload (got {len(payload)})")
        # The TMA engine completes the phase when the armed bytes have landed; nothing to emit.
        self.record(TraceEvent.COMMIT, state.index)

    def consumer_release(self, state: CuteState) -> None:
        self.record(TraceEvent.RELEASE, state.index)
        fence_generic_reads(self.decl.readers, "shared")
        role = self._consumer()
        multicast = self.decl.remote_release
        if multicast is None:
            arrive_as_unit(self.empty, state.index, role.unit)
        elif role.unit is ArrivalUnit.ELECTED_PER_WARP:
            cute.arch.sync_warp()
            _release_lanes(self.empty, state.index, multicast)
        elif role.unit is ArrivalUnit.ELECTED_PER_WARPGROUP:
            _release_first_warp(self.empty, state.index, multicast)
        else:
            _release_every_peer(self.empty, state.index, multicast)


def _my_coords(multicast: Multicast) -> tuple[Any, Any]:
    # Unsigned: the rank is never negative, and % / // by the (static) cluster_m then compile to a mask and
    # a shift instead of a signed division's fix-ups (this runs in every release).
    rank = cutlass.Uint32(cute.arch.block_idx_in_cluster())
    return Int32(rank % multicast.cluster_m), Int32(rank // multicast.cluster_m)


def _release_every_peer(ring: MbarrierRing, index: Any, multicast: Multicast) -> None:
    my_m, my_n = _my_coords(multicast)
    for j in range(multicast.peers):
        ring.arrive(index, peer=multicast.peer_rank(j, my_m, my_n))


@cute.jit
def _release_lanes(ring: MbarrierRing, index: Any, multicast: cutlass.Constexpr) -> None:
    lane = cute.arch.lane_idx()
    if lane < multicast.peers:
        my_m, my_n = _my_coords(multicast)
        ring.arrive(index, peer=multicast.peer_rank(lane, my_m, my_n))


@cute.jit
def _release_first_warp(ring: MbarrierRing, index: Any, multicast: cutlass.Constexpr) -> None:
    if cute.arch.warp_idx() % 4 == 0:
        with cute.arch.elect_one():
            _release_every_peer(ring, index, multicast)
