"""Two GPUs: the tensor-parallel GEMM whose communication warp reduce-scatters C while the GEMM runs.

Rank r holds a K-slice: ``A_r`` (M, K_r) and ``B_r`` (N, K_r); the full C = Σ_r A_r · B_rᵀ is
reduce-scattered by rows, rank r owning row block r (M/2 rows). Each rank computes its partial over A's
rows *rotated* so the block the other rank owns comes first (``rotate_rows``): with raster "n" the
persistent tile order finishes those tiles first, and the communication warp ships exactly them
(``CommConfig(ship_blocks=2)``: block 0 of two) into the other GPU's receive buffer, raising each tile's
flag there at system scope. The owner adds the received partial to its own: by default in the GEMM's
epilogue (``reduce="epilogue"``: before storing a tile of its block, the math warpgroups wait for the
band's flag and add the band's rows to the accumulators, so the stored block is the result), or after
the GEMM (``reduce="pass"``: one warp waits on the device for every flag of the block,
:mod:`tile_comm.await_flags`, then a torch add).

The receive buffers and flags live in ``torch.distributed`` symmetric memory: each rank's buffer is
mapped into the other's address space, so the peer's ``dst`` / ``flags`` are plain device pointers in
the same argument tuple the single-GPU transports use (the ship/publish code does not change).
Back-to-back launches: the owner writes ``credits[t] = epoch`` after adding tile t, and the sender's
communication warp waits for ``credits[t] ≥ epoch − 1`` before overwriting it (``OPT_CREDITS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hopper_gemm.config import GemmConfig, Schedule

from pipes.epoch import as_int32, parity_token

from .args import MAX_TRACED_CTAS, stamp_words
from .await_flags import AWAIT_TIMEOUT_NS
from .config import DEFAULT_STEP_ROWS, CommConfig, Engine, Transport
from .receiver import Receiver
from .role import shipping_order

WORLD = 2
#: Cooperative 256×128 with raster "n": bands of cluster *rows*, so the first row block's tiles finish first.
PEER_GEMM = GemmConfig(256, 128, 1, 2, Schedule.COOPERATIVE, raster="n", group=8)
#: Row bands per copy-engine step (``CommConfig.step_rows``): 8 MiB steps at N = 8192.
STEP_ROWS = DEFAULT_STEP_ROWS[Transport.PEER]


def rotate_rows(a: Any, rank: int) -> Any:
    """``a``'s rows with the block the *other* rank owns first (a copy): rank r owns block r of 2."""
    import torch

    half = a.shape[0] // 2
    own, other = (a[:half], a[half:]) if rank == 0 else (a[half:], a[:half])
    return torch.cat([other, own]).contiguous()


def check_shape(m: int, n: int, config: GemmConfig) -> None:
    """ValueError unless the two row blocks are whole cluster-tile rows and N whole tiles."""
    rows = WORLD * config.tile_m * config.cluster_m
    if m % rows:
        raise ValueError(
            f"M = {m} is invalid for the two-GPU reduce-scatter: allowed a multiple of {rows} "
            f"(2 row blocks × tile_m {config.tile_m} × cluster_m {config.cluster_m}: no tile straddles the blocks)"
        )
    if n % config.tile_n:
        raise ValueError(
            f"N = {n} is invalid for the two-GPU reduce-scatter: allowed a multiple of tile_n {config.tile_n}"
        )


@dataclass
class PeerBuffers:
    """This rank's receive buffer (tiles of its row block, tile-major) and words (flags, CTA flags,
    credits), and the same two of the other rank, mapped here through symmetric memory."""

    data: Any
    words: Any
    peer_data: Any
    peer_words: Any
    path: str

    @classmethod
    def create(cls, m: int, n: int, config: GemmConfig, dtype: Any, device: Any, group: Any) -> PeerBuffers:
        """Both ranks' buffers through the library's :class:`pipes.comm.PeerChannel` (collective): the
        data is this rank's row block as tiles, the words the receiver's flags, CTA flags and credits."""
        from pipes.comm import PeerChannel

        tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
        received = (tiles_m // WORLD) * tiles_n
        words = 2 * tiles_m * tiles_n + 2 * MAX_TRACED_CTAS
        shape = (received, config.tile_m, config.tile_n)
        channel = PeerChannel.create(shape, dtype, flags=words, credits=1, group=group, device=device)
        inbox, outbox = channel.inbox, channel.outbox
        return cls(inbox.data, inbox.flags, outbox.data, outbox.flags, "torch symmetric memory")


def peer_receiver(buffers: PeerBuffers, m: int, n: int, config: GemmConfig, comm: CommConfig) -> Receiver:
    """The sender's view: tiles and flags go to the *other* rank's buffers; stamps and the copy engine's
    step counters stay here. Engine ``sm``: tile-major tiles, a flag per tile; engine ``copy``: the row
    block as rows of C, a flag per step (``comm.step_rows`` row bands)."""
    import torch

    from pipes.comm import step_of_tiles

    tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
    device = buffers.data.device
    stamps = torch.zeros(stamp_words(tiles_m, tiles_n), dtype=torch.int64, device=device)
    counters = torch.zeros(tiles_m * tiles_n, dtype=torch.int32, device=device)  # engine copy only
    if comm.engine is Engine.SM:
        data, layout, flag_index = buffers.peer_data, "tiles", None
    else:
        data, layout = buffers.peer_data.view(m // WORLD, n), "rows"
        flag_index = step_of_tiles(shipping_order(comm, config), tiles_m, tiles_n)
    receiver = Receiver(
        Transport.PEER,
        tiles_m,
        tiles_n,
        config.tile_m,
        config.tile_n,
        data,
        buffers.peer_words,
        stamps,
        counters,
        layout,
    )
    receiver.flag_index = flag_index
    return receiver


def copy_engine_config(n: int) -> GemmConfig:
    """The peer GEMM for the copy engine: raster "m" over bands C's full width, so the walk finishes the
    other rank's row block (rows first) band by band and each step is one contiguous DMA of whole rows."""
    clusters_n = -(-(n // PEER_GEMM.tile_n) // PEER_GEMM.cluster_n)
    if clusters_n > 64:
        raise ValueError(f"N = {n} is invalid for the copy engine's peer GEMM: allowed at most 64 × 256 columns")
    return PEER_GEMM.with_(raster="m", group=clusters_n)


class TensorParallelGemmRS:
    """One rank's fused GEMM + reduce-scatter: ``launch()`` returns this rank's row block of C (M/2, N)."""

    def __init__(
        self,
        a_r: Any,
        b_r: Any,
        rank: int,
        group: Any = None,
        config: GemmConfig | None = None,
        pace_ns: int = 0,
        engine: str | Engine = Engine.COPY,
        copy_streams: int = 2,
        reduce: str = "epilogue",
        step_rows: int | None = None,
    ) -> None:
        """``engine``: ``copy`` (the copy engines DMA each finished row band to the other GPU; the default)
        or ``sm`` (the communication warps store every tile over NVLink themselves). ``reduce``: where
        the other rank's partial is added: ``epilogue`` (the default with the copy engine: the math
        warpgroups wait for each band's flag and add it before storing, ``CommConfig.adds_received``) or
        ``pass`` (after the GEMM: a one-warp kernel awaits every flag, then a torch add over the block).
        ``step_rows``: row bands per copy-engine step (``CommConfig.step_rows``; default :data:`STEP_ROWS`)."""
        from .launcher import EpilogueComm

        engine = Engine(engine)
        if reduce not in ("epilogue", "pass"):
            raise ValueError(f"reduce = {reduce!r} is invalid: allowed 'epilogue' or 'pass'")
        if step_rows is not None and step_rows != 1 and engine is not Engine.COPY:
            raise ValueError(f"step_rows = {step_rows} needs engine 'copy' (the comm warps ship tile by tile)")
        if reduce == "epilogue" and engine is not Engine.COPY:
            raise ValueError("reduce = 'epilogue' needs engine 'copy' (the inbox holds rows of C); use reduce='pass'")
        self.reduce = reduce
        m, n = a_r.shape[0], b_r.shape[0]
        if config is None:
            config = copy_engine_config(n) if engine is Engine.COPY else PEER_GEMM
        check_shape(m, n, config)
        self.m, self.n, self.rank, self.config, self.engine = m, n, rank, config, engine
        self.a_rot = rotate_rows(a_r, rank)
        self.c = a_r.new_empty((m, n))
        self.buffers = PeerBuffers.create(m, n, config, a_r.dtype, a_r.device, group)
        if engine is Engine.COPY:
            comm = CommConfig(
                Transport.PEER,
                ship_blocks=WORLD,
                engine=Engine.COPY,
                copy_streams=copy_streams,
                adds_received=reduce == "epilogue",
                step_rows=STEP_ROWS if step_rows is None else step_rows,
            )
        else:
            # 8 loads in flight per lane (the comm warp gets 56 registers): peer stores over NVLink are
            # latency-bound per warp; 4 in flight left the ship slower than the GEMM (2×H200, measured 2026-11-24).
            comm = CommConfig(Transport.PEER, ship_blocks=WORLD, pace_ns=pace_ns, unroll=8)
        receiver = peer_receiver(self.buffers, m, n, config, comm)
        if engine is Engine.COPY:
            # The other rank's partial of this rank's block lands here as rows, with a flag per step.
            receiver.inbox = self.buffers.data.view(m // WORLD, n)
            receiver.inbox_flags = self.buffers.words
        self.fused = EpilogueComm(
            self.a_rot, b_r, Transport.PEER, out=self.c, receiver=receiver, config=config, comm=comm
        )
        tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
        self.received = (tiles_m // WORLD) * tiles_n
        # The flags the owner awaits: one per tile (sm) or one per step of its block (copy engine).
        self.awaited = self.received if engine is Engine.SM else len(self.fused.shipper.steps)
        self.tiles_n = tiles_n
        tiles = tiles_m * tiles_n
        self.flags = self.buffers.words[: self.received]
        self.credits = self.buffers.words[tiles + 2 * MAX_TRACED_CTAS : tiles + 2 * MAX_TRACED_CTAS + self.received]
        if engine is Engine.COPY:  # the first launch may ship at once: the semaphore starts given
            import torch
            import torch.distributed as dist

            self.credits.fill_(1)
            torch.cuda.synchronize(self.c.device)
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
        cfg, half = self.config, self.m // WORLD
        own = self.c[half:]
        if self.reduce == "epilogue":  # the kernel added what arrived: its second row block is the result
            self._give_credit(epoch)
            return own
        self._await_flags(epoch)
        if self.engine is Engine.COPY:  # the other rank's partial of this block, as rows of C
            own.add_(self.buffers.data.view(half, self.n))
        else:
            received = self.buffers.data.view(half // cfg.tile_m, self.tiles_n, cfg.tile_m, cfg.tile_n)
            own.view(half // cfg.tile_m, cfg.tile_m, self.tiles_n, cfg.tile_n).add_(received.permute(0, 2, 1, 3))
        # Tile t may be overwritten by the next launch once it is added (the sender waits for this credit).
        self._give_credit(epoch)
        return own

    def ship_alone(self) -> None:
        """The transport alone (the T_comm of our DMA): the copy engines ship this rank's C as it is to the
        other GPU, without waiting for the GEMM; the inbox is credited at once (nothing reads it)."""
        epoch = self.fused.launch_alone()
        # Only once the other rank's copies of this launch have landed: its next launch takes this credit
        # and clears it, and a credit given before that clear would be lost.
        self._await_flags(epoch)
        self._give_credit(epoch)

    def _await_flags(self, epoch: int) -> None:
        """One warp waits on the device until every flag of this rank's block holds ``epoch``."""
        import cutlass
        from cutlass.cute.runtime import make_ptr
        from hopper_gemm.launch import current_stream

        from .await_flags import compiled

        flags = make_ptr(cutlass.Uint32, self.flags.data_ptr(), cutlass.cute.AddressSpace.gmem, assumed_align=4)
        # The copy engine raises its flags to the launch's parity token, the comm warps to the epoch.
        value = cutlass.Int32(as_int32(parity_token(epoch) if self.engine is Engine.COPY else epoch))
        compiled()(flags, cutlass.Int32(self.awaited), value, cutlass.Int64(AWAIT_TIMEOUT_NS), current_stream())

    def _give_credit(self, epoch: int) -> None:
        """After consuming a launch: the sender may overwrite the inbox. Engine ``sm``: every tile's credit
        becomes the epoch (the comm warp waits for ``≥ epoch − 1``); engine ``copy``: ``credits[0] = 1``, the
        binary semaphore the other GPU's copy work takes before its first copy of the next launch."""
        self.credits.fill_(1 if self.engine is Engine.COPY else as_int32(epoch))
