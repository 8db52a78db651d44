"""The copy engines ship each finished *step* of tiles while the kernel that computes them still runs.

The comm warp moves no bytes: for every finished tile it adds 1 to its step's counter in device memory
(``red.release.sys``, :class:`pipes.cute.comm.StepCounters`). A *step* is the rectangle of tiles the
kernel's walk computes together (:meth:`pipes.tile_order.TileOrder.step`): one row of a raster band,
so its rows of the output are one 2-D block. Per launch, on the launching stream before the kernel: the
step counters to 0 and the launch's epoch into a device word; after the kernel, per step and in walk
order, on ``streams`` copy streams in turn::

    cuStreamWaitValue32(counter[step] ≥ tiles of the step)                # the step is complete
    [cuStreamBatchMemOp: wait credits[tile] reached previous(epoch)]     # only with credits
    cudaMemcpyAsync(the step's rows → the same rows of the receive buffer) # 2-D if not whole rows
    cuStreamBatchMemOp: memory barrier (system scope)                    # data before flag
    cudaMemcpyAsync(epoch word → flags[step])                             # 4 bytes

With ``token_flags`` (peer GPUs) each flag is instead raised to the launch's
:func:`~pipes.epoch.parity_token` with one fenced ``cuStreamWriteValue32``, and the launch takes each
receiver's binary credit (its ``credits`` word: wait for 1, write 0) right before that receiver's first
step (:func:`credit_takes`; a stream whose first step for it comes later waits for that take). Steps may go to several
receivers (a reduce-scatter over more than two GPUs ships each peer its own row block): each
:class:`Step` names its :class:`CopyTarget`, and :func:`plan_steps` with ``block_rows`` assigns them.

None of these values changes between launches (the epoch travels through the device word), so the
sequence is captured once into a CUDA graph and each launch replays it with one call; queued call by
call it cost ~17 µs of host time per step, enough to make a launch host-bound (2×H200, measured
2026-11-24). The SMs never stall on PCIe or NVLink writes, so the kernel's mainloop keeps its speed.

The copy work waits on an event recorded *before* the kernel (after the resets), and the launching
stream waits for it before its next work: the next launch cannot reset the counters or overwrite the
source while a copy still reads it, and whatever follows on the stream sees the data at the receiver.

Deadlock-freedom: the streams wait only on counters the running kernel advances; the kernel waits on
nothing the streams do. Queue the waits after the kernel's launch call: the call loads the kernel's
module, and loading a module while a stream waits on a counter nobody advances would wait forever.
Set ``CUDA_DEVICE_MAX_CONNECTIONS=32`` before CUDA starts when several shippers run at once: a stream
blocked in a counter wait stalls every stream that shares its hardware queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..epoch import parity_token, previous
from ..tile_order import TileOrder
from .stream_ops import Timeline, TimingEvents, capture, check_consecutive
from .stream_ops import check_cuda as _check
from .stream_ops import copy_streams as _streams
from .stream_ops import cuda_event as _event
from .stream_ops import record as _record
from .stream_ops import sys_barrier as _sys_barrier
from .stream_ops import take_credit as _take_credit

#: Operations per ``cuStreamBatchMemOp`` call (the driver's limit is 256).
BATCH = 128


@dataclass(frozen=True)
class Step:
    """One step's copy: a 2-D block of the source (byte offsets from the source's and the receive
    buffer's starts)."""

    index: int
    tiles: tuple[int, ...]  # tile indices (tm·tiles_n + tn) inside the output
    src_offset: int
    dst_offset: int
    width_bytes: int
    rows: int
    target: int = 0  # which CopyTarget of the shipper receives it


def step_of_tiles(order: TileOrder, tiles_m: int, tiles_n: int) -> np.ndarray:
    """Per tile (``tm·tiles_n + tn``), the step that computes it: the flag word that covers it."""
    clusters_m, clusters_n = order.cluster_grid(tiles_m, tiles_n)
    tm, tn = np.divmod(np.arange(tiles_m * tiles_n), tiles_n)
    return np.asarray(order.step(tm, tn, clusters_m, clusters_n), dtype=np.int64)


def plan_steps(
    order: TileOrder,
    m: int,
    n: int,
    tile: tuple[int, int],
    elem_bytes: int,
    ldc: int,
    dst_ld: int | None = None,
    block_rows: int | None = None,
) -> list[Step]:
    """Every step of an ``m × n`` output in walk order. ``ldc``: the output's row stride in elements;
    ``dst_ld``: the receive buffer's (default whole tiles wide, ``tiles_n × tile_n``). ``block_rows``:
    the output's rows are cut into blocks of this many rows and block ``i``'s steps go to target ``i``
    (each lands at the same rows of its receive buffer); a step may not straddle two blocks."""
    tile_m, tile_n = tile
    tiles_m, tiles_n = -(-m // tile_m), -(-n // tile_n)
    clusters_m, clusters_n = order.cluster_grid(tiles_m, tiles_n)
    dst_ld = tiles_n * tile_n if dst_ld is None else dst_ld
    steps = []
    for index in range(order.steps(clusters_m, clusters_n)):
        rows, cols = order.step_tiles(index, tiles_m, tiles_n)
        row0, col0 = rows[0] * tile_m, cols[0] * tile_n
        end = min(rows[-1] * tile_m + tile_m, m)
        target = 0
        if block_rows is not None:
            target = row0 // block_rows
            if (end - 1) // block_rows != target:
                raise ValueError(
                    f"step {index} covers rows {row0}..{end - 1}, across blocks of {block_rows} rows: "
                    "allowed only steps inside one block (blocks of whole step rows)"
                )
        steps.append(
            Step(
                index,
                tuple(tm * tiles_n + tn for tm in rows for tn in cols),
                (row0 * ldc + col0) * elem_bytes,
                (row0 * dst_ld + col0) * elem_bytes,
                (min(cols[-1] * tile_n + tile_n, n) - col0) * elem_bytes,
                end - row0,
                target,
            )
        )
    return steps


@dataclass(frozen=True)
class CopyTarget:
    """Where a :class:`CopyEngineShipper` ships to and what it signals with.

    ``data``: the receive buffer (a torch tensor: device, pinned host or a peer GPU's symmetric memory;
    rows laid out as the source's). ``flags``, ``credits``: device-visible addresses of ``uint32`` words
    (one flag per step, one credit per tile; :meth:`pipes.comm.Receiver.addresses`). ``counters``: a
    device ``int32`` tensor, one step counter per step, that the comm warps count into.
    """

    data: Any
    flags: int
    credits: int
    counters: Any


#: How a shipper deals its steps over its copy streams: ``steps``: in walk order, round-robin (a second
#: stream's copy hides the first one's wait-and-flag gap); ``targets``: each receiver its own streams
#: (target t: streams t, t + T, … of T targets, round-robin among them), so copies to different receivers
#: run at once.
SPREADS = ("steps", "targets")


def streams_of_steps(steps: Sequence[Step], streams: int, spread: str = "steps") -> list[int]:
    """The copy stream of each step (:data:`SPREADS`)."""
    if spread not in SPREADS:
        raise ValueError(f"spread = {spread!r} is invalid: allowed one of {SPREADS}")
    if spread == "steps":
        return [i % streams for i in range(len(steps))]
    targets = sorted({s.target for s in steps})
    place = {t: i for i, t in enumerate(targets)}
    dealt: dict[int, int] = {}
    out = []
    for step in steps:
        first = place[step.target]
        own = list(range(first, streams, len(targets))) or [first % streams]
        k = dealt.get(step.target, 0)
        dealt[step.target] = k + 1
        out.append(own[k % len(own)])
    return out


def copy_groups(steps: Sequence[Step], sizes: Sequence[int], linear: Sequence[bool]) -> list[tuple[int, ...]]:
    """The steps (indices, in walk order) that one copy ships together: group g takes up to
    ``sizes[min(g, len(sizes) - 1)]`` consecutive steps, a step joining only where it goes to the same
    receiver and continues the group's rows in the source and in the receive buffer as one linear copy
    (``linear[i]``: step i is whole rows on both sides). A growing schedule such as (1, 2, 4) ships the first
    finished rows at once and the rest in larger copies, which the links move faster
    (``benchmarks/studies/link_rates.py``); every step keeps its own counter wait and flag. (1,): a copy
    per step."""
    if not sizes or any(isinstance(z, bool) or not isinstance(z, int) or z < 1 for z in sizes):
        raise ValueError(f"copy sizes = {tuple(sizes)!r} are invalid: allowed a non-empty sequence of ints >= 1")
    groups: list[list[int]] = []
    for i, step in enumerate(steps):
        if groups:
            group = groups[-1]
            last = steps[group[-1]]
            room = len(group) < sizes[min(len(groups) - 1, len(sizes) - 1)]
            size = last.width_bytes * last.rows
            follows = (
                linear[i]
                and linear[group[-1]]
                and step.target == last.target
                and step.src_offset == last.src_offset + size
                and step.dst_offset == last.dst_offset + size
            )
            if room and follows:
                group.append(i)
                continue
        groups.append([i])
    return [tuple(g) for g in groups]


def streams_of_copies(groups: Sequence[tuple[int, ...]], streams: int) -> list[int]:
    """The copy stream of each step when steps are copied in ``groups`` (:func:`copy_groups`): the copies
    take the streams in turn, every step of a copy on its copy's stream."""
    return [g % streams for g, group in enumerate(groups) for _ in group]


@dataclass(frozen=True)
class CreditTake:
    """Where a launch takes one receiver's credit: on ``stream``, right before step ``step`` (the receiver's
    first in walk order); every other stream with steps for it waits for that take before its own first
    one, ``waits[stream] = step``."""

    target: int
    stream: int
    step: int
    waits: dict[int, int]


def credit_takes(targets: Sequence[int], stream_of: Sequence[int]) -> list[CreditTake]:
    """Each receiver's credit, taken only when its first step is due (``targets[i]``, ``stream_of[i]``: the
    receiver and stream of step ``i``, in walk order): shipping the first block does not wait for the
    receivers of later blocks to finish their previous launch. In the order of the receivers' first steps."""
    first: dict[int, tuple[int, int]] = {}  # receiver → (stream, step) of its first step
    waits: dict[int, dict[int, int]] = {}  # receiver → {another stream: its first step for the receiver}
    for i, (target, stream) in enumerate(zip(targets, stream_of, strict=True)):
        if target not in first:
            first[target], waits[target] = (stream, i), {}
        elif stream != first[target][0]:
            waits[target].setdefault(stream, i)
    return [CreditTake(t, stream, step, waits[t]) for t, (stream, step) in first.items()]


def _target_tuple(target: CopyTarget | Sequence[CopyTarget]) -> tuple[CopyTarget, ...]:
    return (target,) if isinstance(target, CopyTarget) else tuple(target)


class CopyEngineShipper:
    """Queues the copy engines' work for one launcher: ``src`` (device) → ``target.data``, step by step.

    A launch is :meth:`begin` (before the kernel, on the launching stream: the step counters back to 0,
    the launch's epoch into a device word, the start event), the kernel, then :meth:`ship` (the copy
    work on the copy streams after the start event; the launching stream waits for it). The copy work has
    the same values every launch (each step waits for its own tile count; the flag copies read the epoch
    word), so it is captured once into a CUDA graph and each launch replays it with one call.
    """

    def __init__(
        self,
        src: Any,
        target: CopyTarget | Sequence[CopyTarget],
        steps: list[Step],
        streams: int = 2,
        *,
        token_flags: bool = False,
        spread: str = "steps",
        odd_targets: CopyTarget | Sequence[CopyTarget] | None = None,
        copy_sizes: Sequence[int] = (1,),
    ) -> None:
        """``target``: one :class:`CopyTarget`, or one per receiver (``Step.target`` picks; they share the
        step counters). ``steps``: :func:`plan_steps` of the kernel's tile order. ``streams``: copy streams
        the steps alternate over (a second stream's copy hides the first one's wait-and-flag gap).
        ``token_flags``: the peer-GPU protocol: a launch first takes every target's ``credits`` word (waits
        for 1, writes 0; the receiving GPU writes 1 once it has consumed the previous launch) and each flag
        is raised to the launch's :func:`~pipes.epoch.parity_token` with a fenced ``cuStreamWriteValue32``;
        launches must then take consecutive epochs. ``spread``: how the steps are dealt over the streams
        (:data:`SPREADS`, :func:`streams_of_steps`). ``odd_targets``: double-buffered receivers (with
        ``token_flags``): the launches of odd epochs ship to these instead, one per target (same rows, flags
        and credits of their own), so a launch takes the credit its receiver gave back two launches before,
        not the one the previous launch's receiver gave (docs/comm.md, "Double-buffered inboxes").
        ``copy_sizes``: steps per copy as they come (:func:`copy_groups`; (1,): a copy per step); the copies
        take the streams in turn (``spread="steps"`` only)."""
        import torch
        from cuda.bindings import driver as cu

        targets, odd = _target_tuple(target), None if odd_targets is None else _target_tuple(odd_targets)
        if odd is not None:
            if not token_flags:
                raise ValueError("odd_targets needs token_flags: only the peer protocol's launches alternate by parity")
            if len(odd) != len(targets):
                raise ValueError(f"{len(odd)} odd_targets for {len(targets)} targets: allowed one per target")
        if getattr(src, "device", None) is None or src.device.type != "cuda" or src.dim() != 2:
            raise ValueError("CopyEngineShipper ships a 2-D CUDA tensor (the kernel's output)")
        if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= 8:
            raise ValueError(f"streams = {streams!r} is invalid: allowed an int in [1, 8]")
        if not targets or any(not isinstance(t, CopyTarget) for t in targets):
            raise ValueError("CopyEngineShipper ships to a CopyTarget or a non-empty sequence of them")
        counters = targets[0].counters
        for i, t in enumerate(targets + (odd or ())):
            if t.data.element_size() != src.element_size():
                raise ValueError(f"target {i} holds {t.data.dtype}, the source {src.dtype}: they must match")
            if t.counters.data_ptr() != counters.data_ptr():
                raise ValueError(f"target {i} counts into other step counters than target 0: targets share them")
            if t.data.stride(0) != targets[0].data.stride(0):
                raise ValueError(f"target {i}'s rows have another pitch than target 0's: the targets must share it")
        if len(steps) > counters.numel():
            raise ValueError(f"{len(steps)} steps but the target holds {counters.numel()} counters")
        unknown = sorted({s.target for s in steps} - set(range(len(targets))))
        if unknown:
            raise ValueError(f"steps name targets {unknown}, but the shipper has {len(targets)} target(s)")
        copy_sizes = tuple(copy_sizes)
        if copy_sizes != (1,) and spread != "steps":
            raise ValueError(f"copy_sizes = {copy_sizes} with spread = {spread!r}: allowed only with spread 'steps'")
        self._stream_of = streams_of_steps(steps, streams, spread)
        self.targets = targets
        self.odd_targets = odd
        #: The targets of an even launch and of an odd one (the same unless double-buffered).
        by_parity = (targets, odd or targets)
        self.src = src
        self.streams = _streams(src.device.index or 0, streams)
        self.steps = steps
        self._cu = cu
        self._src = src.data_ptr()
        self._dst = [[t.data.data_ptr() for t in side] for side in by_parity]
        self._pitches = (src.stride(0) * src.element_size(), targets[0].data.stride(0) * targets[0].data.element_size())
        # Whole rows on both sides: one linear copy. Measured on 2×H200 (2026-11-24): a 2-D copy costs
        # ~130 ns per row per stream (a 256-row step took ~33 µs whether its rows were 8 or 16 KiB).
        self._linear = [s.width_bytes == self._pitches[0] == self._pitches[1] for s in self.steps]
        #: The steps each copy ships (:func:`copy_groups`), and each step's stream: its copy's, in turn.
        self.groups = copy_groups(self.steps, copy_sizes, self._linear)
        if copy_sizes != (1,):
            self._stream_of = streams_of_copies(self.groups, streams)
        self._counters = counters.data_ptr()
        self._counter_bytes = 4 * (max(s.index for s in self.steps) + 1) if self.steps else 0
        self._counter = [cu.CUdeviceptr(self._counters + 4 * s.index) for s in self.steps]
        # One ready flag per step: every queued write carries a system-wide memory barrier (~1 µs each).
        self._flag = [[side[s.target].flags + 4 * s.index for s in self.steps] for side in by_parity]
        # The launch's epoch, which every flag copy reads (so the copy work's values never change).
        self._epoch_word = torch.zeros(1, dtype=torch.int32, device=src.device)
        self._credit_waits = [self._credit_batches(targets[s.target].credits, s.tiles) for s in self.steps]
        used = sorted({s.target for s in self.steps}) if self.steps else [0]
        self._launch_credits = [
            {t: cu.CUdeviceptr(side[t].credits) for t in used} if token_flags else {} for side in by_parity
        ]
        self._credit_takes = credit_takes([s.target for s in self.steps], self._stream_of) if token_flags else []
        self._credit_taken = {t.target: _event() for t in self._credit_takes}
        self._peer = token_flags
        self._last_epoch: int | None = None
        self._start, self._done = _event(), _event()
        self._forks = [_event() for _ in self.streams]
        self._graphs: dict[tuple[bool, bool, int], Any] = {}  # (waits, timed, token) → the instantiated graph
        #: Set True to time the next launches (:meth:`timeline_us`): CUDA events at the launch's start, at
        #: the kernel's end (its launch call's place in the stream), after the launch credits are taken and
        #: after each step's flag. The step events are recorded by the replayed graph itself.
        self.timed = False
        self._timing = TimingEvents.create(len(self.steps))

    def _credit_batches(self, credits: int, tiles: tuple[int, ...]) -> list[list[Any]]:
        """``credits[tile] ≥ value`` waits for ``tiles`` (``CU_STREAM_WAIT_VALUE_GEQ`` compares cyclically, as
        :func:`~pipes.epoch.reached`), in ``cuStreamBatchMemOp`` lists of at most :data:`BATCH`."""
        cu = self._cu
        params = []
        for tile in tiles:
            p = cu.CUstreamBatchMemOpParams()
            p.waitValue.operation = cu.CUstreamBatchMemOpType.CU_STREAM_MEM_OP_WAIT_VALUE_32
            p.waitValue.address = cu.CUdeviceptr(credits + 4 * tile)
            p.waitValue.flags = int(cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
            params.append(p)
        return [params[i : i + BATCH] for i in range(0, len(params), BATCH)]

    # --- what a launch queues ---------------------------------------------------------------------
    def begin(self, epoch: int) -> None:
        """Before the kernel's launch, on the launching stream: every step counter to 0 (the kernel counts
        this launch's tiles from there), ``epoch`` into the epoch word, then the start event the copy work
        waits for (it starts after the launching stream's earlier work, and never before the resets)."""
        import torch
        from cuda.bindings import runtime as cudart

        if self._peer:
            check_consecutive(self._last_epoch, epoch, "the peer flags")
        self._last_epoch = epoch
        self.prepare()
        launching = torch.cuda.current_stream(self.src.device).cuda_stream
        _check(cudart.cudaMemsetAsync(self._counters, 0, self._counter_bytes, launching)[0], "cudaMemsetAsync")
        word = self._cu.CUdeviceptr(self._epoch_word.data_ptr())
        handle = self._cu.CUstream(launching)
        _check(self._cu.cuStreamWriteValue32(handle, word, epoch & 0xFFFFFFFF, 0)[0], "cuStreamWriteValue32")
        _check(cudart.cudaEventRecord(self._start, launching)[0], "cudaEventRecord")
        if self.timed:
            _record(self._timing.start, launching)

    def prepare(self) -> None:
        """Build every graph a launch may replay (both flag tokens; the timed ones while ``timed``), now.
        :meth:`begin` calls it before the launch's kernel is queued: building a graph may load modules,
        which may wait for the device to be idle, and a kernel waiting for another GPU's copy work would
        then wait on a graph not yet launched there (CUDA's lazy loading hazards). Call it yourself before
        the first launch when several ranks share one CUDA context."""
        for token in (parity_token(0), parity_token(1)) if self._peer else (0,):
            self._graph(True, self.timed, token)

    def ship(self, epoch: int, *, waits: bool = True, credits: bool = False) -> None:
        """After the kernel's launch call: the copy work after the start event (each step waits for its
        tiles' count unless ``waits`` is False: the T_comm baseline ships C as it is), then the launching
        stream waits for it. ``credits``: each step also waits for the receiver's per-tile credits of the
        previous epoch (queued call by call: those values change every launch)."""
        import torch
        from cuda.bindings import runtime as cudart

        launching = torch.cuda.current_stream(self.src.device)
        side = self.streams[0].cuda_stream
        _check(cudart.cudaStreamWaitEvent(side, self._start, 0)[0], "cudaStreamWaitEvent")
        if self.timed:  # right after the kernel's launch: its end
            _record(self._timing.kernel_end, launching.cuda_stream)
        token = parity_token(epoch) if self._peer else 0
        if credits and self.odd_targets is not None:
            raise ValueError(
                "credits=True (per-tile credits) with odd_targets: a double-buffered receiver takes launch credits"
            )
        if credits:
            self._queue(waits, credit_epoch=epoch, timed=self.timed, token=token)
        else:
            _check(cudart.cudaGraphLaunch(self._graph(waits, self.timed, token), side)[0], "cudaGraphLaunch")
        _check(cudart.cudaEventRecord(self._done, side)[0], "cudaEventRecord")
        _check(cudart.cudaStreamWaitEvent(launching.cuda_stream, self._done, 0)[0], "cudaStreamWaitEvent")

    def _graph(self, waits: bool, timed: bool = False, token: int = 0) -> Any:
        """The copy work captured once per variant (from the first copy stream, forking to the others)."""
        key = (waits, timed, token)
        if key not in self._graphs:
            side = self.streams[0].cuda_stream
            self._graphs[key] = capture(side, lambda: self._queue(waits, credit_epoch=None, timed=timed, token=token))
        return self._graphs[key][1]

    def _queue(self, waits: bool, credit_epoch: int | None, timed: bool = False, token: int = 0) -> None:
        """The copy work, from the first copy stream: fork to the other streams, then per copy (one step, or
        consecutive steps of :func:`copy_groups`) on its stream: for each of its steps (peer: before a
        receiver's first step its credit, :func:`credit_takes`) wait for the step's tile count; copy the
        rows; then raise each step's flag: a system-scope memory barrier and a copy of the epoch word, or
        (``token``, peer) a ``cuStreamWriteValue32`` of the token, fenced system-wide by default; join back."""
        from cuda.bindings import runtime as cudart

        cu = self._cu
        raw = [s.cuda_stream for s in self.streams]
        handles = [cu.CUstream(r) for r in raw]
        for fork, stream in zip(self._forks[1:], raw[1:], strict=True):
            _check(cudart.cudaEventRecord(fork, raw[0])[0], "cudaEventRecord")
            _check(cudart.cudaStreamWaitEvent(stream, fork, 0)[0], "cudaStreamWaitEvent")
        # Each receiving GPU consumed the previous launch: take its credit right before its first step.
        parity = (token - 1) & 1 if token else 0  # parity_token(epoch) - 1 is the epoch's parity
        dsts, flags, launch_credits = self._dst[parity], self._flag[parity], self._launch_credits[parity]
        take_at = {(t.stream, t.step): t for t in self._credit_takes}
        wait_at = {(k, i): t for t in self._credit_takes for k, i in t.waits.items()}
        geq = cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ
        kind = cudart.cudaMemcpyKind.cudaMemcpyDefault  # pinned host or a peer GPU: unified addressing decides
        src_pitch, dst_pitch = self._pitches
        barrier = _sys_barrier(cu)
        for group in self.groups:
            k = self._stream_of[group[0]]
            handle, stream = handles[k], raw[k]
            for i in group:  # each step of the copy: its receiver's credit, its tiles counted, its credits
                take = take_at.get((k, i))
                if take is not None:
                    credit = launch_credits[take.target]
                    _check(cu.cuStreamBatchMemOp(handle, 2, _take_credit(cu, credit), 0)[0], "credit")
                    _check(cudart.cudaEventRecord(self._credit_taken[take.target], stream)[0], "cudaEventRecord")
                    if timed and take is self._credit_takes[0]:
                        _record(self._timing.credit_taken, stream)
                elif (k, i) in wait_at:  # another stream took this receiver's credit
                    event = self._credit_taken[wait_at[(k, i)].target]
                    _check(cudart.cudaStreamWaitEvent(stream, event, 0)[0], "cudaStreamWaitEvent")
                if waits:
                    tiles = len(self.steps[i].tiles)
                    _check(cu.cuStreamWaitValue32(handle, self._counter[i], tiles, geq)[0], "cuStreamWaitValue32")
                if credit_epoch is not None:
                    for params in self._credit_waits[i]:
                        for p in params:
                            p.waitValue.value = previous(credit_epoch) & 0xFFFFFFFF  # GEQ compares cyclically
                        _check(cu.cuStreamBatchMemOp(handle, len(params), params, 0)[0], "cuStreamBatchMemOp")
                if timed:  # the step's tiles are counted (and its credits taken): its copy may begin
                    _record(self._timing.started[i], stream)
            first = self.steps[group[0]]
            dst, src = dsts[first.target] + first.dst_offset, self._src + first.src_offset
            width, rows = first.width_bytes, first.rows
            if self._linear[group[0]]:  # a group is one run of whole rows (copy_groups)
                size = sum(self.steps[i].width_bytes * self.steps[i].rows for i in group)
                err = cudart.cudaMemcpyAsync(dst, src, size, kind, stream)
            else:
                err = cudart.cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, kind, stream)
            _check(err[0], "cudaMemcpyAsync")
            for i in group:  # the copy's rows are visible system-wide before each step's flag says so
                if token:  # flags 0: the write's own fence (like __threadfence_system, scoped to the stream)
                    flag = cu.CUdeviceptr(flags[i])
                    _check(cu.cuStreamWriteValue32(handle, flag, token, 0)[0], "cuStreamWriteValue32 flag")
                else:
                    _check(cu.cuStreamBatchMemOp(handle, 1, barrier, 0)[0], "cuStreamBatchMemOp barrier")
                    _check(cudart.cudaMemcpyAsync(flags[i], self._epoch_word.data_ptr(), 4, kind, stream)[0], "flag")
                if timed:
                    _record(self._timing.steps[i], stream)
        for fork, stream in zip(self._forks[1:], raw[1:], strict=True):
            _check(cudart.cudaEventRecord(fork, stream)[0], "cudaEventRecord")
            _check(cudart.cudaStreamWaitEvent(raw[0], fork, 0)[0], "cudaStreamWaitEvent")

    def timeline_us(self) -> Timeline:
        """The last timed launch (``timed = True``; synchronizes), in µs from its start."""
        return self._timing.read(credit=bool(self._launch_credits[0]))
