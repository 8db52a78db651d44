"""The fused GEMM + communication warp on torch operands: validate, compile once, launch with fresh epochs.

    fused = EpilogueComm(a, b, "host")          # C = a @ b.T; tiles land in pinned host memory
    epoch = fused.launch()                      # one launch; every tile's flag becomes `epoch`
    fused.out                                   # C on the device
    fused.receiver.untiled(m, n)                # C as it arrived at the receiver

Every check runs before anything compiles or launches (``ValueError`` naming the argument): the
operands as ``hopper_gemm.api.validate`` checks them, N a multiple of 8 (16-byte vectors), the
cooperative schedule, a page-locked receive buffer for ``host``.

With engine ``copy`` (the default for ``host``) a launch is the kernel plus the copy engine's queued
steps (:class:`pipes.comm.CopyEngineShipper`); the receive buffer is then C itself, row-major (``rows`` layout).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hopper_gemm.config import GemmConfig, Schedule, check_a_rows_rotated

from .args import kernel_args, launch_options
from .cached_launch import CachedLaunch
from .config import CommConfig, Transport
from .config import transport as parse_transport
from .receiver import Receiver

#: What the fused kernel uses where the measured table (``gemm_modes.autotable``) picks ping-pong, which
#: cannot host a communication warp, or stream-K or split-K, which split tiles between clusters: the
#: table's unsplit cooperative configuration.
COOPERATIVE_FALLBACK = GemmConfig(tile_m=256, tile_n=128, cluster_m=1, cluster_n=2, schedule=Schedule.COOPERATIVE)


def default_config(m: int, n: int, k: int, dtype: str = "bf16", comm: CommConfig | None = None) -> GemmConfig:
    """The measured table's configuration for the shape if it is cooperative and unsplit, else the
    cooperative fallback (every tile must be stored whole by its own CTA: ``hopper_gemm.comm_hook.check_comm``).

    With the copy engine (``comm.counts_steps``) the raster band spans C's full width (``group`` = every
    cluster column, at most 64): each step is then whole rows of C, one contiguous DMA. Measured on the
    H100 (2026-11-23): 8192×8192×16384 bf16 steps of 1 MiB (group 8, 4 KiB rows) ship at ~42 GB/s and
    fall behind the GEMM (E 0.69); full-width 4 MiB steps ship at ~48 GB/s and keep pace (E 0.88), for a
    GEMM 5 % slower (its L2 reuse is lower). One compile per distinct group.
    """
    from gemm_modes.autotable import pick
    from hopper_gemm.config import Problem

    picked = pick(Problem(dtype), (m, n, k), swap=False)  # the comm role ships C's rows as they are
    # The plain kernel without the table's performance modes (GemmKernel refuses them with a comm role):
    # split tiles are not stored whole by one CTA, a deferred epilogue stores from every math warp, and
    # warpgroups along N stage a tile in halves.
    whole = picked.schedule is Schedule.COOPERATIVE and not picked.partial_sums and picked.wg_split == "m"
    config = picked.config if whole else None
    # The fused protocol is checked with one buffer per acquire, and the comm role launches without PDL.
    config = (config or COOPERATIVE_FALLBACK).with_(epi_batch=1, ab_stages=None, pdl=False)
    if comm is not None and comm.counts_steps:
        config = full_width_band(config, m, n)
    return config


def full_width_band(config: GemmConfig, m: int, n: int) -> GemmConfig:
    """``config`` walking raster ``m`` in one band as wide as C (at most 64 cluster columns): each step
    of the walk is then whole rows of C."""
    from pipes.tile_order import TileOrder, ceil_div

    tiles = (ceil_div(m, config.tile_m), ceil_div(n, config.tile_n))
    _, clusters_n = TileOrder.of(config).cluster_grid(*tiles)
    return config.with_(raster="m", group=max(1, min(64, clusters_n)))


class EpilogueComm:
    """``C = alpha · a @ b.T (+ bias)`` whose tiles a communication warp ships to ``receiver`` as they finish."""

    def __init__(
        self,
        a: Any,
        b: Any,
        transport: str | Transport = "host",
        *,
        out: Any = None,
        data: Any = None,
        receiver: Receiver | None = None,
        config: GemmConfig | None = None,
        comm: CommConfig | None = None,
        b_layout: str = "nk",
        bias: Any = None,
        alpha: float = 1.0,
        max_clusters: int | None = None,
        a_rows_rotated_by: int = 0,
    ) -> None:
        """``data``: the receive buffer to use (tile-major, validated; pinned for ``host``);
        ``receiver``: share another launcher's receiver (its buffers and epochs); ``max_clusters``: a
        smaller persistent grid (more tiles per CTA: the tests use it to make the hand-off ring wrap);
        ``a_rows_rotated_by``: C's row r is computed from ``a``'s row (r + this) mod M
        (``Problem.a_rows_rotated_by``)."""
        from hopper_gemm.api import validate

        chosen = parse_transport(transport)
        comm = comm if comm is not None else CommConfig.default(chosen)
        if comm.transport is not chosen:
            raise ValueError(f"transport = {chosen.value!r} but comm.transport = {comm.transport.value!r}")
        ops = validate(a, b, bias=bias, alpha=alpha, out=out, b_layout=b_layout)
        if a_rows_rotated_by:
            ops = replace(ops, problem=replace(ops.problem, a_rows_rotated_by=a_rows_rotated_by))
        m, n, _ = ops.mnk
        if n % 8:
            raise ValueError(f"N = {n} is invalid with a communication warp: allowed a multiple of 8 (16-byte vectors)")
        config = config if config is not None else default_config(m, n, ops.mnk[2], ops.problem.dtype, comm)
        from hopper_gemm.comm_hook import check_comm

        from .role import CommRole

        check_comm(config)
        check_a_rows_rotated(config, ops.problem)
        CommRole(comm, config)  # raises for a tile its comm warp cannot copy
        config.stages(ops.problem)  # raises if it does not fit
        self.m, self.n = m, n
        self.config, self.comm, self.problem = config, comm, ops.problem
        self.out = out if out is not None else a.new_empty((m, n))
        layout = "rows" if comm.counts_steps else "tiles"
        flag_index = None
        if comm.counts_steps:  # one ready flag per step of the walk
            from pipes.comm import step_of_tiles

            from .role import shipping_order

            flag_index = step_of_tiles(shipping_order(comm, config), -(-m // config.tile_m), -(-n // config.tile_n))
        if receiver is None:
            tile = (config.tile_m, config.tile_n)
            receiver = Receiver.create(chosen, m, n, tile, a.dtype, a.device, data, layout=layout)
            receiver.flag_index = flag_index
        elif (
            receiver.transport is not chosen
            or (receiver.tile_m, receiver.tile_n) != (config.tile_m, config.tile_n)
            or receiver.layout != layout
        ):
            raise ValueError(
                f"the shared receiver is for transport {receiver.transport.value!r}, {receiver.tile_m}×"
                f"{receiver.tile_n} tiles and layout {receiver.layout!r}, not {chosen.value!r}, "
                f"{config.tile_m}×{config.tile_n} and {layout!r}"
            )
        elif (receiver.tiles_m, receiver.tiles_n) != (
            -(-m // config.tile_m),
            -(-n // config.tile_n),
        ) and layout == "rows":
            raise ValueError(
                f"the shared receiver is for {receiver.tiles_m}×{receiver.tiles_n} tiles, not a {m}×{n} output"
            )
        elif receiver.tiles_m * receiver.tile_m < m or receiver.tiles_n * receiver.tile_n < n:
            raise ValueError(f"the shared receiver holds fewer tiles than a {m}×{n} output")
        elif flag_index is not None and not np.array_equal(receiver.flag_index, flag_index):
            raise ValueError("the shared receiver's ready flags cover other steps (another tile order)")
        if max_clusters is not None and (
            isinstance(max_clusters, bool) or not isinstance(max_clusters, int) or max_clusters < 1
        ):
            raise ValueError(f"max_clusters = {max_clusters!r} is invalid: allowed None or an int >= 1")
        self.receiver = receiver
        self.max_clusters = max_clusters
        self._ops = ops
        self._operands: Any = None  # the CuTe views of a, b, out, bias: built once (each costs µs per call)
        self._kernel: Any = None
        self._cached: Any = None  # CachedLaunch of the fused kernel (False: the DSL's own call)
        self._alone: Any = None
        self._shipper: Any = None  # engine copy: the copy engine's queue (built on first launch)

    # --- what is launched ----------------------------------------------------------------------------
    @property
    def clusters(self) -> int:
        from gemm_modes.launch import clusters_to_launch

        clusters = clusters_to_launch(self.config, self.m, self.n, self.out.device.index or 0)
        return clusters if self.max_clusters is None else min(clusters, self.max_clusters)

    @property
    def ctas(self) -> int:
        return self.clusters * self.config.cluster_size

    def compile(self) -> None:
        """Compile the fused kernel (and nothing else) now; ``launch`` does it on first use."""
        from .build import fused

        if self._kernel is None:
            self._kernel = fused(self.config, self.problem, self.comm)

    def comm_args(self, epoch: int, *, delay_ns: int = 0, credits: bool = False, stamps: bool = False) -> tuple:
        options = launch_options(credits=credits, stamps=stamps)
        return kernel_args(self.receiver.addresses(epoch), self.problem.out_dtype, epoch, delay_ns, options)

    def _inbox(self, epoch: int) -> tuple[int, int] | None:
        """A double-buffered inbox: this launch's (inbox, inbox flags) addresses (None: one inbox)."""
        if not self.receiver.double_buffered:
            return None
        addresses = self.receiver.addresses(epoch)
        return addresses.inbox, addresses.inbox_flags

    def launch(
        self, *, delay_ns: int = 0, credits: bool = False, stamps: bool = False, epoch: int | None = None
    ) -> int:
        """One launch on the current stream; returns its epoch (every tile's flag becomes it).

        ``delay_ns``: the communication warp sleeps this long per tile (back-pressure tests);
        ``credits``: wait for the receiver's credit before overwriting a tile; ``stamps``: timestamps.
        """
        import cutlass
        from hopper_gemm.launch import current_stream, cute_operands

        self.compile()
        epoch = self.receiver.next_epoch() if epoch is None else epoch
        ops = self._ops
        if self._operands is None:
            self._operands = (
                *cute_operands(ops.a, ops.b_nk, self.out, ops.bias),
                cutlass.Float32(ops.alpha),
                cutlass.Int32(self.clusters),
            )
        shipper = self.shipper
        if shipper is not None:
            shipper.begin(epoch)
        stream = current_stream()
        if self._cached is None:  # the first launch converts every argument once (False: not cacheable)
            comm_args = self.comm_args(epoch, delay_ns=delay_ns, credits=credits, stamps=stamps)
            inbox = self._inbox(epoch)
            self._cached = CachedLaunch.build(self._kernel, self._operands, stream, comm_args, inbox) or False
        if self._cached:
            options = launch_options(credits=credits, stamps=stamps)
            self._cached(int(stream), epoch, delay_ns, options, self._inbox(epoch))
        else:
            comm_args = self.comm_args(epoch, delay_ns=delay_ns, credits=credits, stamps=stamps)
            self._kernel(*self._operands, stream, comm_args)
        if shipper is not None:
            shipper.ship(epoch, credits=credits)
        return epoch

    @property
    def shipper(self) -> Any:
        """Engine ``copy``: the :class:`pipes.comm.CopyEngineShipper` (None otherwise)."""
        if self._shipper is None and self.comm.counts_steps:
            from .role import shipping_order

            self._shipper = copy_engine_shipper(
                self.receiver,
                self.out,
                shipping_order(self.comm, self.config),
                self.comm.copy_streams,
                rows=self.comm.shipped_rows(self.m),
                peer=self.comm.transport is Transport.PEER,
                block_rows=self.m // self.comm.ship_blocks if self.receiver.copy_targets else None,
                spread=self.comm.copy_spread,
                copy_sizes=self.comm.copy_sizes,
            )
        return self._shipper

    def launch_alone(self, *, epoch: int | None = None, stamps: bool = False) -> int:
        """The communication warps without the GEMM: ship ``out`` as it is (the T_comm baseline); with
        engine ``copy``, the copy engine's steps without their waits."""
        if self.shipper is not None:
            epoch = self.receiver.next_epoch() if epoch is None else epoch
            self.shipper.begin(epoch)
            self.shipper.ship(epoch, waits=False)
            return epoch
        import cutlass
        from cutlass.cute.runtime import from_dlpack
        from hopper_gemm.launch import current_stream

        from .build import alone

        if self._alone is None:
            self._alone = alone(self.config, self.comm, self.problem.out_dtype)
        epoch = self.receiver.next_epoch() if epoch is None else epoch
        c = from_dlpack(self.out, assumed_align=16).mark_layout_dynamic(leading_dim=1)
        self._alone(c, cutlass.Int32(self.clusters), current_stream(), self.comm_args(epoch, stamps=stamps))
        return epoch


def copy_engine_shipper(
    receiver: Receiver,
    c: Any,
    order: Any,
    streams: int,
    *,
    rows: int,
    peer: bool,
    block_rows: int | None = None,
    spread: str = "steps",
    copy_sizes: tuple[int, ...] = (1,),
) -> Any:
    """The library's :class:`~pipes.comm.CopyEngineShipper` of C's first ``rows`` rows into ``receiver``
    (layout ``rows``), counting into the receiver's step counters; ``peer``: parity-token flags and the
    launch credits of the peer protocol. ``block_rows``: block ``i`` of that many rows goes to
    ``receiver.copy_targets[i]`` (a reduce-scatter over more than two GPUs); ``spread``: how the steps are
    dealt over the streams (``pipes.comm.SPREADS``); ``copy_sizes``: steps per copy (``pipes.comm.copy_groups``)."""
    from pipes.comm import CopyEngineShipper, CopyTarget, plan_steps

    if receiver.layout != "rows" or c.device.type != "cuda":
        raise ValueError("the copy engine ships a CUDA C into a receiver of layout 'rows'")
    tile = (receiver.tile_m, receiver.tile_n)
    steps = plan_steps(order, rows, c.shape[1], tile, c.element_size(), c.stride(0), block_rows=block_rows)
    if block_rows is not None:
        odd = receiver.odd_copy_targets
        return CopyEngineShipper(
            c,
            receiver.copy_targets,
            steps,
            streams,
            token_flags=peer,
            spread=spread,
            odd_targets=odd,
            copy_sizes=copy_sizes,
        )
    addresses = receiver.addresses()
    target = CopyTarget(receiver.data, addresses.flags, addresses.credits, receiver.counters)
    return CopyEngineShipper(c, target, steps, streams, token_flags=peer, spread=spread, copy_sizes=copy_sizes)
