"""Tensor-parallel GEMM whose communication warp reduce-scatters C while the GEMM runs, on 2 or more GPUs.

Rank r of ``world`` holds a K-slice: ``A_r`` (M, K_r) and ``B_r`` (N, K_r); the full C = Σ_r A_r · B_rᵀ is
reduce-scattered by rows, rank r owning row block r (M / world rows). Each rank computes its partial over
A's rows *rotated* (:func:`block_order`): the blocks of ranks r+1, r+2, … first and its own last. With
raster "m" the persistent tile order finishes them in that order, and the copy engines ship each band of
block p to rank r+p+1 (mod world) as soon as it is complete (``CommConfig(ship_blocks=world)``: every
block but the last leaves), raising the band's flag there at system scope. Ranks in step ship block p at
the same time, each to a different peer, so no GPU's links receive from two senders at once. The owner adds the
``world − 1`` received partials to its own: by default in the GEMM's epilogue (``reduce="epilogue"``:
before storing a tile of its block, the math warpgroups wait for the band's flags and add the bands' rows
to the accumulators, so the stored block is the result), or after the GEMM (``reduce="pass"``: one warp
waits on the device for every flag of the block, :mod:`tile_comm.await_flags`, then torch adds). Two GPUs
also offer ``engine="sm"``: the communication warps store every tile over NVLink themselves.

The receive buffers and flags live in ``torch.distributed`` symmetric memory (``pipes.comm.PeerGroup``):
every rank's buffer is mapped into the others' address spaces, so a peer's inbox and flags are plain
device pointers. Rank j's inbox holds one slot per other rank (:func:`tile_comm.role.inbox_slot`): slot p
comes from the rank that computes j's block as its block p, at the same rows as there, with its flags.
Back-to-back launches: the copy engine takes one binary credit per receiving rank before its first copy
(the receiver writes it back once it consumed the launch); engine ``sm`` waits per tile for
``credits[t] ≥ epoch − 1`` before overwriting it (``OPT_CREDITS``). With ``inbox_buffers=2`` every rank has
two inboxes, launch ``e`` writing inbox ``e % 2`` with its own flags and credits: a sender then waits for
the receiver's launch before the previous one, so the ranks are coupled only through each launch's data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hopper_gemm.config import GemmConfig, Schedule

from pipes.epoch import as_int32, parity_token

from .args import MAX_TRACED_CTAS, stamp_words
from .await_flags import AWAIT_TIMEOUT_NS
from .config import DEFAULT_STEP_ROWS, PEER_COPY_STREAMS, CommConfig, Engine, Transport
from .receiver import Receiver
from .role import shipping_order

#: The world size of the two-GPU engine ``sm`` (and of ``epilogue_comm.py --transport peer``).
WORLD = 2
#: Cooperative 256×128 with raster "n": bands of cluster *rows*, so the first row block's tiles finish first.
PEER_GEMM = GemmConfig(256, 128, 1, 2, Schedule.COOPERATIVE, raster="n", group=8)
#: The most row bands per copy-engine step (``CommConfig.step_rows``): 16 MiB steps at N = 8192.
STEP_ROWS = DEFAULT_STEP_ROWS[Transport.PEER]


def step_rows_for(m: int, config: GemmConfig, world: int = WORLD) -> int:
    """Row bands per copy step unless told otherwise: the deepest, up to :data:`STEP_ROWS` and halving, that
    cuts every row block into whole steps (``check_shape`` then says whether M fits at all)."""
    rows = STEP_ROWS
    while rows > 1 and m % (world * config.tile_m * config.cluster_m * rows):
        rows //= 2
    return rows


def block_order(rank: int, world: int = WORLD) -> list[int]:
    """The row blocks of C in rank ``rank``'s rotated rows: ranks ``rank + 1, rank + 2, …`` (mod ``world``),
    its own last; block p of that order goes to the rank at position p."""
    if world < 2 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} of world {world}: allowed world ≥ 2 and 0 ≤ rank < world")
    return [(rank + p) % world for p in range(1, world + 1)]


def rotated_rows_start(rank: int, world: int, m: int) -> int:
    """The row of A where :func:`block_order`'s rows begin: A read from there, wrapping around at M, is
    :func:`rotate_rows` of A (``Problem.a_rows_rotated_by``)."""
    return block_order(rank, world)[0] * (m // world)


def rotate_rows(a: Any, rank: int, world: int = WORLD) -> Any:
    """``a``'s rows in the order of :func:`block_order` (a copy): rank r owns block r of ``world``."""
    import torch

    rows = a.shape[0] // world
    return torch.cat([a[b * rows : (b + 1) * rows] for b in block_order(rank, world)]).contiguous()


def check_shape(m: int, n: int, config: GemmConfig, world: int = WORLD, step_rows: int = 1) -> None:
    """ValueError unless the row blocks are whole copy steps (``step_rows`` cluster rows) and N whole tiles."""
    rows = world * config.tile_m * config.cluster_m * step_rows
    if m % rows:
        raise ValueError(
            f"M = {m} is invalid for the reduce-scatter over {world} GPUs: allowed a multiple of {rows} "
            f"({world} row blocks × tile_m {config.tile_m} × cluster_m {config.cluster_m} × {step_rows} row(s) "
            "per copy step: no tile or copy straddles two blocks)"
        )
    if n % config.tile_n:
        raise ValueError(
            f"N = {n} is invalid for the reduce-scatter over {world} GPUs: allowed a multiple of tile_n {config.tile_n}"
        )


@dataclass
class PeerBuffers:
    """This rank's receive buffers (``data``: a slot per other rank) and words (flags, CTA flags,
    credits), and every other rank's, mapped here through symmetric memory (``outboxes[rank]``).
    ``buffers`` inboxes (1, or 2 double-buffered: launch ``e`` uses inbox ``e % 2``) lie one after the
    other in ``data`` and in ``words``; :meth:`inbox` and :meth:`outbox` cut one out."""

    data: Any
    words: Any
    outboxes: dict[int, Any]
    path: str
    buffers: int = 1

    @classmethod
    def create(
        cls,
        m: int,
        n: int,
        config: GemmConfig,
        dtype: Any,
        device: Any,
        group: Any,
        world: int = WORLD,
        buffers: int = 1,
    ) -> PeerBuffers:
        """Every rank's buffers through the library's :class:`pipes.comm.PeerGroup` (collective): the data
        is ``buffers`` × the ``world − 1`` slots of this rank's row block, as tiles, the words the
        receiver's flags, CTA flags and credits, once per buffer."""
        from pipes.comm import PeerGroup

        received, words = _inbox_extent(m, n, config, world)
        shape = (buffers * received, config.tile_m, config.tile_n)
        peers = PeerGroup.create(shape, dtype, flags=buffers * words, credits=1, group=group, device=device)
        outboxes = {r: (box.data, box.flags) for r, box in peers.outboxes.items()}
        return cls(peers.inbox.data, peers.inbox.flags, outboxes, "torch symmetric memory", buffers)

    @classmethod
    def on_one_gpu(
        cls, m: int, n: int, config: GemmConfig, dtype: Any, device: Any, world: int, buffers: int = 1
    ) -> list[PeerBuffers]:
        """Every rank's buffers on one GPU, each rank's ``outboxes`` the others' (one GPU standing in for
        ``world``: the protocol and the kernels are the same, the pointers local)."""
        import torch

        received, words = _inbox_extent(m, n, config, world)
        boxes = [
            (
                torch.zeros(buffers * received, config.tile_m, config.tile_n, dtype=dtype, device=device),
                torch.zeros(buffers * words, dtype=torch.int32, device=device),
            )
            for _ in range(world)
        ]
        others = [{p: boxes[p] for p in range(world) if p != r} for r in range(world)]
        return [cls(*boxes[r], others[r], "one GPU", buffers) for r in range(world)]

    def inbox(self, buffer: int = 0) -> tuple[Any, Any]:
        """This rank's inbox ``buffer``: (data, words)."""
        return _cut(self.data, self.words, self.buffers, buffer)

    def outbox(self, rank: int, buffer: int = 0) -> tuple[Any, Any]:
        """Rank ``rank``'s inbox ``buffer`` (data, words), as this GPU writes it."""
        return _cut(*self.outboxes[rank], self.buffers, buffer)


def _inbox_extent(m: int, n: int, config: GemmConfig, world: int) -> tuple[int, int]:
    """(tiles, int32 words) of one inbox: the ``world − 1`` slots of this rank's row block; flags, CTA
    flags and credits (as :class:`tile_comm.receiver.Receiver` lays out its words)."""
    tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
    return (tiles_m // world) * (world - 1) * tiles_n, 2 * tiles_m * tiles_n + 2 * MAX_TRACED_CTAS


def _cut(data: Any, words: Any, buffers: int, buffer: int) -> tuple[Any, Any]:
    if not 0 <= buffer < buffers:
        raise ValueError(f"inbox buffer {buffer} of {buffers}: allowed 0..{buffers - 1}")
    tiles, count = data.shape[0] // buffers, words.shape[0] // buffers
    return data[buffer * tiles : (buffer + 1) * tiles], words[buffer * count : (buffer + 1) * count]


def peer_receiver(
    buffers: PeerBuffers, m: int, n: int, config: GemmConfig, comm: CommConfig, rank: int, world: int
) -> Receiver:
    """The sender's view: tiles and flags go to the other ranks' buffers; stamps and the copy engine's
    step counters stay here. Engine ``sm`` (two GPUs): tile-major tiles, a flag per tile; engine ``copy``:
    the shipped blocks as rows of C, a flag per step (``comm.step_rows`` row bands), block p into slot p
    of rank ``block_order(rank, world)[p]``'s inbox (``Receiver.copy_targets``; double-buffered, the odd
    launches' into the second inbox, ``Receiver.odd_copy_targets``)."""
    import torch

    from pipes.comm import CopyTarget, step_of_tiles

    tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
    device = buffers.data.device
    stamps = torch.zeros(stamp_words(tiles_m, tiles_n), dtype=torch.int64, device=device)
    counters = torch.zeros(tiles_m * tiles_n, dtype=torch.int32, device=device)  # engine copy only
    order = block_order(rank, world)
    first_data, first_words = buffers.outbox(order[0])
    targets = odd_targets = None
    if comm.engine is Engine.SM:
        data, layout, flag_index = first_data, "tiles", None
    else:
        shipped = comm.shipped_rows(m)
        data, layout = first_data.view(shipped, n), "rows"
        flag_index = step_of_tiles(shipping_order(comm, config), tiles_m, tiles_n)
        credits = 4 * (tiles_m * tiles_n + 2 * MAX_TRACED_CTAS)  # Receiver's words: flags, CTA flags, credits

        def targets_into(buffer: int) -> list[CopyTarget]:
            out = []
            for slot, peer in enumerate(order[:-1]):
                peer_data, peer_words = buffers.outbox(peer, buffer)
                base = peer_words.data_ptr()
                out.append(CopyTarget(peer_data.view(shipped, n), base, base + credits + 4 * slot, counters))
            return out

        targets = targets_into(0)
        odd_targets = targets_into(1) if buffers.buffers == 2 else None
    receiver = Receiver(
        Transport.PEER,
        tiles_m,
        tiles_n,
        config.tile_m,
        config.tile_n,
        data,
        first_words,
        stamps,
        counters,
        layout,
    )
    receiver.flag_index = flag_index
    receiver.copy_targets = targets
    receiver.odd_copy_targets = odd_targets
    return receiver


def copy_engine_config(n: int) -> GemmConfig:
    """The peer GEMM for the copy engine: raster "m" over bands C's full width, so the walk finishes the
    other rank's row block (rows first) band by band and each step is one contiguous DMA of whole rows."""
    clusters_n = -(-(n // PEER_GEMM.tile_n) // PEER_GEMM.cluster_n)
    if clusters_n > 64:
        raise ValueError(f"N = {n} is invalid for the copy engine's peer GEMM: allowed at most 64 × 256 columns")
    return PEER_GEMM.with_(raster="m", group=clusters_n)


def check_copy_engine_config(config: GemmConfig, n: int) -> None:
    """ValueError unless ``config`` walks C in bands of whole rows (raster "m", one band C's full width):
    the copy engine numbers its steps over the shipped rows, the kernel and the owner over all of C, and
    the two numberings agree only when a step is a band row of the full width."""
    clusters_n = -(-(n // config.tile_n) // config.cluster_n)
    if config.raster != "m" or config.group < clusters_n:
        raise ValueError(
            f"config raster {config.raster!r}, group {config.group} is invalid for the copy engine's reduce-scatter "
            f"at N = {n}: allowed raster 'm' with group ≥ {clusters_n} (each step whole rows of C; see "
            "copy_engine_config)"
        )


class TensorParallelGemmRS:
    """One rank's fused GEMM + reduce-scatter over the ranks of ``group``: ``launch()`` returns this rank's
    row block of C (M / world, N)."""

    def __init__(
        self,
        a_r: Any,
        b_r: Any,
        rank: int,
        group: Any = None,
        config: GemmConfig | None = None,
        pace_ns: int = 0,
        engine: str | Engine = Engine.COPY,
        copy_streams: int = PEER_COPY_STREAMS,
        reduce: str = "epilogue",
        step_rows: int | None = None,
        buffers: PeerBuffers | None = None,
        max_clusters: int | None = None,
        spread: str = "steps",
        inbox_buffers: int | None = None,
        copy_sizes: tuple[int, ...] = (1,),
        rotated_reads: bool = False,
    ) -> None:
        """``engine``: ``copy`` (the copy engines DMA each finished row band to its owner; the default)
        or ``sm`` (two GPUs: the communication warps store every tile over NVLink themselves). ``reduce``:
        where the other ranks' partials are added: ``epilogue`` (the default with the copy engine: the math
        warpgroups wait for each band's flags and add the bands before storing, ``CommConfig.adds_received``)
        or ``pass`` (after the GEMM: a one-warp kernel awaits every flag, then torch adds over the block).
        ``step_rows``: row bands per copy-engine step (``CommConfig.step_rows``; default :func:`step_rows_for`).
        ``buffers``: this rank's buffers when not created collectively over ``group`` (the world size is
        then their ranks', :meth:`PeerBuffers.on_one_gpu`); ``max_clusters``: at most this many clusters
        (several ranks sharing one GPU must all be resident at once). ``spread``: how the copy engine deals
        its steps over the streams (``CommConfig.copy_spread``: ``steps`` or ``targets``). ``inbox_buffers``:
        1, or 2 (engine ``copy``): launch ``e`` ships into inbox ``e % 2``, so a sender takes the credit
        its receiver gave two launches before and never waits for the receiver's previous launch; twice
        the inbox memory (default: ``buffers.buffers``, else 1). Measured slower than one inbox on 2 and 4
        GPUs: the credits of one inbox keep the ranks' rotation in step (benchmarks/RESULTS.md).
        ``copy_sizes``: steps per copy as they come (``CommConfig.copy_sizes``; (1,): a copy per step).
        ``rotated_reads``: the GEMM reads ``a_r``'s row blocks in :func:`block_order` where they are (its load
        warp rotates A's rows) instead of from a rotated copy made here: a producer that writes ``a_r``
        each launch (an MLP's first GEMM) then writes it as it is."""
        from .launcher import EpilogueComm

        if inbox_buffers is None:
            inbox_buffers = buffers.buffers if buffers is not None else 1
        if inbox_buffers not in (1, 2) or isinstance(inbox_buffers, bool):
            raise ValueError(f"inbox_buffers = {inbox_buffers!r} is invalid: allowed 1 or 2")
        if buffers is not None and buffers.buffers != inbox_buffers:
            raise ValueError(f"inbox_buffers = {inbox_buffers}, but the buffers given hold {buffers.buffers} inbox(es)")
        if inbox_buffers == 2 and Engine(engine) is not Engine.COPY:
            raise ValueError("inbox_buffers = 2 needs engine 'copy' (engine 'sm' takes a credit per tile)")

        engine = Engine(engine)
        if reduce not in ("epilogue", "pass"):
            raise ValueError(f"reduce = {reduce!r} is invalid: allowed 'epilogue' or 'pass'")
        if step_rows is not None and step_rows != 1 and engine is not Engine.COPY:
            raise ValueError(f"step_rows = {step_rows} needs engine 'copy' (the comm warps ship tile by tile)")
        if reduce == "epilogue" and engine is not Engine.COPY:
            raise ValueError("reduce = 'epilogue' needs engine 'copy' (the inbox holds rows of C); use reduce='pass'")
        import torch.distributed as dist

        if buffers is not None:
            world = len(buffers.outboxes) + 1
        else:
            world = dist.get_world_size(group) if dist.is_initialized() else 1
        if world < 2 or (engine is Engine.SM and world != WORLD):
            allowed = "exactly 2 GPUs" if engine is Engine.SM else "at least 2 GPUs"
            raise ValueError(f"world size {world}: the reduce-scatter with engine {engine.value!r} needs {allowed}")
        self.reduce = reduce
        m, n = a_r.shape[0], b_r.shape[0]
        if config is None:
            config = copy_engine_config(n) if engine is Engine.COPY else PEER_GEMM
        elif engine is Engine.COPY:
            check_copy_engine_config(config, n)
        steps = (step_rows_for(m, config, world) if step_rows is None else step_rows) if engine is Engine.COPY else 1
        check_shape(m, n, config, world, steps)
        self.m, self.n, self.rank, self.world, self.config, self.engine = m, n, rank, world, config, engine
        rotation = rotated_rows_start(rank, world, m) if rotated_reads else 0
        self.gemm_a = a_r if rotated_reads else rotate_rows(a_r, rank, world)  # the A the GEMM's TMA reads
        self.c = a_r.new_empty((m, n))
        self.buffers = buffers or PeerBuffers.create(
            m, n, config, a_r.dtype, a_r.device, group, world, buffers=inbox_buffers
        )
        if engine is Engine.COPY:
            comm = CommConfig(
                Transport.PEER,
                ship_blocks=world,
                engine=Engine.COPY,
                copy_streams=copy_streams,
                adds_received=reduce == "epilogue",
                step_rows=steps,
                copy_spread=spread,
                copy_sizes=tuple(copy_sizes),
            )
        else:
            # 8 loads in flight per lane (the comm warp gets 56 registers): peer stores over NVLink are
            # latency-bound per warp; 4 in flight left the ship slower than the GEMM (2×H200, measured 2026-11-24).
            comm = CommConfig(Transport.PEER, ship_blocks=world, pace_ns=pace_ns, unroll=8)
        receiver = peer_receiver(self.buffers, m, n, config, comm, rank, world)
        block = m // world
        inboxes = [self.buffers.inbox(b) for b in range(inbox_buffers)]
        if engine is Engine.COPY:
            # The other ranks' partials of this rank's block land here as rows, a slot each, with a flag per step.
            receiver.inbox, receiver.inbox_flags = inboxes[0][0].view((world - 1) * block, n), inboxes[0][1]
            if inbox_buffers == 2:
                receiver.odd_inbox, receiver.odd_inbox_flags = inboxes[1][0].view((world - 1) * block, n), inboxes[1][1]
        self.fused = EpilogueComm(
            self.gemm_a,
            b_r,
            Transport.PEER,
            out=self.c,
            receiver=receiver,
            config=config,
            comm=comm,
            max_clusters=max_clusters,
            a_rows_rotated_by=rotation,
        )
        tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
        self.received = (tiles_m // world) * (world - 1) * tiles_n
        # The flags the owner awaits: one per tile (sm) or one per step of every slot (copy engine).
        self.awaited = self.received if engine is Engine.SM else len(self.fused.shipper.steps)
        self.tiles_n = tiles_n
        tiles = tiles_m * tiles_n
        # Per inbox: its data, its flags, and (engine sm) a credit per received tile or (copy engine) one
        # binary credit per slot (per sender).
        credits = self.received if engine is Engine.SM else world - 1
        first_credit = tiles + 2 * MAX_TRACED_CTAS
        self.inboxes = [
            (data, words[: self.received], words[first_credit : first_credit + credits]) for data, words in inboxes
        ]
        if engine is Engine.COPY:  # the first launch may ship at once: every sender's semaphore starts given
            import torch

            for _, _, given in self.inboxes:
                given.fill_(1)
            torch.cuda.synchronize(self.c.device)
            if buffers is None:
                dist.barrier(group)

    def compile(self) -> None:
        from .await_flags import compiled

        self.fused.compile()
        compiled()

    def launch(self, delay_ns: int = 0) -> Any:
        """This rank's row block of C after one launch. ``delay_ns``: this rank's communication warp sleeps
        that long per tile before counting it (tests: the other rank's reduction must wait for the bands)."""
        # copy engine: one credit per launch
        epoch = self.fused.launch(credits=self.engine is Engine.SM, delay_ns=delay_ns)
        cfg, half = self.config, self.m // self.world
        own = self.c[self.m - half :]
        if self.reduce == "epilogue":  # the kernel added what arrived: its last row block is the result
            self._give_credit(epoch)
            return own
        self._await_flags(epoch)
        data = self._inbox(epoch)[0]
        if self.engine is Engine.COPY:  # the other ranks' partials of this block, as rows of C, slot by slot
            for partial in data.view(self.world - 1, half, self.n):
                own.add_(partial)
        else:
            received = data.view(half // cfg.tile_m, self.tiles_n, cfg.tile_m, cfg.tile_n)
            own.view(half // cfg.tile_m, cfg.tile_m, self.tiles_n, cfg.tile_n).add_(received.permute(0, 2, 1, 3))
        # Tile t may be overwritten by the next launch once it is added (the sender waits for this credit).
        self._give_credit(epoch)
        return own

    def ship_alone(self) -> None:
        """The transport alone (the T_comm of our DMA): the copy engines ship this rank's C as it is to the
        other GPUs, without waiting for the GEMM; the inbox is credited at once (nothing reads it)."""
        epoch = self.fused.launch_alone()
        # Only once the other ranks' copies of this launch have landed: their next launch takes this credit
        # and clears it, and a credit given before that clear would be lost.
        self._await_flags(epoch)
        self._give_credit(epoch)

    def _await_flags(self, epoch: int) -> None:
        """One warp waits on the device until every flag of this rank's inbox holds ``epoch``'s value."""
        import cutlass
        from cutlass.cute.runtime import make_ptr
        from hopper_gemm.launch import current_stream

        from .await_flags import compiled

        awaited = self._inbox(epoch)[1]
        flags = make_ptr(cutlass.Uint32, awaited.data_ptr(), cutlass.cute.AddressSpace.gmem, assumed_align=4)
        # The copy engine raises its flags to the launch's parity token, the comm warps to the epoch.
        value = cutlass.Int32(as_int32(parity_token(epoch) if self.engine is Engine.COPY else epoch))
        compiled()(flags, cutlass.Int32(self.awaited), value, cutlass.Int64(AWAIT_TIMEOUT_NS), current_stream())

    def _inbox(self, epoch: int) -> tuple[Any, Any, Any]:
        """(data, flags, credits) of the inbox launch ``epoch`` ships into (``epoch % 2`` if double-buffered)."""
        return self.inboxes[epoch & 1 if len(self.inboxes) == 2 else 0]

    def _give_credit(self, epoch: int) -> None:
        """After consuming a launch: the senders may overwrite its inbox. Engine ``sm``: every tile's credit
        becomes the epoch (the comm warp waits for ``≥ epoch − 1``); engine ``copy``: ``credits[p] = 1`` for
        every slot p, the binary semaphore slot p's sender takes before its first copy into this inbox.
        Double-buffered, the inbox's flags go back to 0 first: the launch two later raises them to the same
        parity token, and a flag still holding it would pass that launch's wait before its data lands."""
        _, flags, credits = self._inbox(epoch)
        if len(self.inboxes) == 2:
            flags.zero_()
        credits.fill_(1 if self.engine is Engine.COPY else as_int32(epoch))
