"""Ship each finished tile to a receiver while the kernel still runs: Y = alpha · X, tile by tile.

    python examples/ship_tiles.py [--m 1024 --n 2048 --receiver host|device|peer --launches 3 --check]
    torchrun --nproc-per-node 2 examples/ship_tiles.py --receiver peer --rows 512   # or it spawns the two ranks
    (--rows/--cols are --m/--n: torchrun would take --m and --n as abbreviations of its own options)

==============  =============================================  ===========================================
role (warps)    pipeline / barrier                             who arrives on what, how many
==============  =============================================  ===========================================
``load`` (0)    → ``x_tiles`` TmaLoadPipeline: 3 slots of a    full[s]: 1 ``arrive.expect_tx`` (elected
                64×128 tile of X                               lane) + the tile's 16 KiB of TMA bytes
``xform``       ← ``x_tiles``: wait, alpha·X into a staging    empty[s]: 4 (one elected lane per warp)
(2–5)           buffer, release
``xform``       → ``y_staging`` TmaStoreStaging, 2 buffers;    ``xform`` named barrier: 128 threads, after
                named barrier ``xform`` around each buffer     the ``.read`` wait and after each thread's
                                                               ``fence.proxy.async.shared::cta``
``store`` (2)   → ``tiles`` StoreNotifyPipeline (the           full[s]: 1 (elected lane of warp 2) after
                TileShipper's, 2 slots, lag 1): begin_tile,    ``cp.async.bulk.wait_group 1``, no ``.read``
                TMA store of Y, end_tile; finish at the end    (the tile before is complete in global)
``comm`` (1)    ← ``tiles``: TileShipper.run: wait, the        empty[s]: 1 (elected lane of warp 1)
                tile's credit, copy it out, its flag, release
comm → reader   ready flag per tile                            1 ``st.release.<scope>`` of the epoch
reader → comm   credit per tile                                1 grant per tile per launch
==============  =============================================  ===========================================

Persistent CTAs walk tiles ``bid, bid + grid, …``: the comm warp ships tile t while ``xform`` scales t + 1.
Receivers (``pipes.comm``): ``host`` (page-locked memory, system scope; a host thread checksums each tile as
it lands and grants its credit), ``device`` (this GPU, GPU scope), ``peer`` (the other GPU, system scope).
Without a GPU: compiles for sm_90a, prints registers and spills, proves the protocol with pipes.check
(examples/ship_tiles_proof.py: the same pipelines as CPU models, with planted defects).
"""

# No `from __future__ import annotations` here: cute.struct and cute.kernel read their annotations as objects.
import functools
import time

import cutlass
import cutlass.cute as cute
from cuda.bindings import driver
from cutlass import BFloat16, Float32, Int32, Int64
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import from_dlpack, make_fake_stream, make_fake_tensor

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.comm import Epochs, Receiver, TileConsumer, fake_ship_args, ship_args
from pipes.cute import (
    NamedBarrierAllocator,
    RoleLayout,
    TmaLoadPipeline,
    TmaStoreStaging,
    Warps,
    init_pipelines,
    storage_words,
)
from pipes.cute.comm import ShipSpec, TileShipper
from pipes.epoch import as_int32
from pipes.tile_order import TileOrder

try:
    import torch
except ImportError:  # a CPU-only install: compile and prove only
    torch = None

TM, TN, VEC = 64, 128, 8  # tile rows and columns; bf16 values per 16-byte vector
LOAD_STAGES, STAGING, SLOTS, LAG = 3, 2, 2, 1
THREADS, XFORM = 192, 2  # warp 0 load, 1 comm, 2-5 xform (warp 2 also stores)
RECEIVERS = ("host", "device", "peer")
AHEAD = 32  # launches queued ahead of the receiving thread: the launching thread never fills CUDA's queue


def check_input(m: int, n: int, receiver: str = "host", launches: int = 1) -> None:
    """``ValueError`` naming the problem, before anything compiles."""
    if receiver not in RECEIVERS:
        raise ValueError(f"receiver = {receiver!r} is invalid: allowed one of {RECEIVERS}")
    for name, value, tile in (("M", m, TM), ("N", n, TN)):
        if isinstance(value, bool) or not isinstance(value, int) or value < tile or value % tile:
            raise ValueError(f"{name} = {value!r} is invalid: allowed a positive multiple of the tile's {tile}")
    if isinstance(launches, bool) or not isinstance(launches, int) or launches < 1:
        raise ValueError(f"launches = {launches!r} is invalid: allowed an int >= 1")


#: The copy engine's steps (``engine="copy"``): one row of tiles each. The walk is row-major, which is a raster
#: "m" band as wide as C for N up to 64 tiles.
ROW_STEPS = TileOrder(1, 1, "m", group=64)


class ShipTiles:
    """The kernel for a receiver whose flags need ``scope``: ``(x, y, alpha, grid, stream, ship_args)``.
    ``engine``: ``sm`` (the comm warp copies each tile) or ``copy`` (it counts each tile into its row's step
    for a :class:`pipes.comm.CopyEngineShipper`)."""

    def __init__(self, scope: str = "sys", engine: str = "sm") -> None:
        order = ROW_STEPS if engine == "copy" else None
        spec = ShipSpec((TM, TN), engine=engine, scope=scope, slots=SLOTS, lag=LAG, order=order, comm_warp=1)
        self.shipper = TileShipper(spec)
        unit = ArrivalUnit.ELECTED_PER_WARP
        bytes_ = Completion.TRANSACTION_BYTES
        spec = PipelineSpec("x_tiles", LOAD_STAGES, Role("load", unit), Role("xform", unit, 4), bytes_, TM * TN * 2)
        self.load = TmaLoadPipeline(spec)
        self.notify, roles = self.shipper.declare({"load": Warps(0), "xform": Warps(XFORM, 4)}, storing_warp=XFORM)
        self.layout = RoleLayout(THREADS, roles)
        self.staging = TmaStoreStaging(STAGING, name="y_staging", committed_by=self.notify)

        @cute.struct
        class Storage:
            pipes: cute.struct.MemRange[Int64, storage_words(self.load, self.notify)]
            sx: cute.struct.Align[cute.struct.MemRange[BFloat16, TM * TN * LOAD_STAGES], 128]
            sy: cute.struct.Align[cute.struct.MemRange[BFloat16, TM * TN * STAGING], 128]

        self.storage = Storage

    @cute.jit
    def __call__(self, x: cute.Tensor, y: cute.Tensor, alpha: Float32, grid: Int32, stream, args) -> None:
        tile = cute.make_layout((TM, TN), stride=(TN, 1))
        load_atom, tma_x = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), x, tile, (TM, TN))
        store_atom, tma_y = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), y, tile, (TM, TN))
        kernel = self.kernel(load_atom, tma_x, store_atom, tma_y, y, alpha, args)
        kernel.launch(grid=(grid, 1, 1), block=(THREADS, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, load_atom, tma_x, store_atom, tma_y, y: cute.Tensor, alpha: Float32, args) -> None:
        st = cutlass.memory.SmemAllocator().allocate(self.storage)
        init_pipelines((self.load, self.notify), st.pipes.data_ptr(), layout=self.layout)  # every thread
        sx = st.sx.get_tensor(cute.make_layout((TM, TN, LOAD_STAGES), stride=(TN, 1, TM * TN)))
        sy = st.sy.get_tensor(cute.make_layout((TM, TN, STAGING), stride=(TN, 1, TM * TN)))
        bid, grid = cute.arch.block_idx()[0], cute.arch.grid_dim()[0]
        tiles_n = y.shape[1] // TN
        tiles = y.shape[0] // TM * tiles_n
        if self.layout.is_role("load"):
            gx = cute.group_modes(cute.local_tile(tma_x, (TM, TN), (None, None)), 0, 2)
            sx_part, gx_part = cpasync.tma_partition(load_atom, 0, cute.make_layout(1), cute.group_modes(sx, 0, 2), gx)
            producer = self.load.producer()
            for t in cutlass.range(bid, tiles, grid, unroll=1):
                slot = producer.acquire()
                where = (None, t // tiles_n, t % tiles_n)
                cute.copy(load_atom, gx_part[where], sx_part[(None, slot)], tma_bar_ptr=producer.barrier(slot))
                producer.commit()
            producer.tail()
        if self.layout.is_role("comm"):
            self.shipper.run(self.notify, y, args)  # every tile the storing warp notifies, until end-of-stream
        if self.layout.is_role("xform"):
            gy = cute.group_modes(cute.local_tile(tma_y, (TM, TN), (None, None)), 0, 2)
            sy_part, gy_part = cpasync.tma_partition(store_atom, 0, cute.make_layout(1), cute.group_modes(sy, 0, 2), gy)
            staged = self.staging.producer(sync=NamedBarrierAllocator(THREADS).allocate("xform", threads=128))
            consumer, notify = self.load.consumer(), self.notify.producer()
            is_storer = self.layout.is_role("store")
            tidx = cute.arch.thread_idx()[0] - XFORM * 32
            for t in cutlass.range(bid, tiles, grid, unroll=1):
                tm, tn = t // tiles_n, t % tiles_n
                slot = consumer.wait()
                notify = self.shipper.begin_tile(notify, is_storer, args, tm, tn, y.shape[1])  # a free ring slot
                buf = staged.acquire()  # the TMA store that read this buffer two tiles ago is done reading it
                for i in cutlass.range_constexpr(TM * TN // (VEC * 128)):
                    v = i * 128 + tidx  # this thread's 16-byte vector v of the tile
                    at = (v // (TN // VEC), v % (TN // VEC))
                    xs = cute.local_tile(sx[(None, None, slot)], (1, VEC), at).load()
                    cute.local_tile(sy[(None, None, buf)], (1, VEC), at).store((xs.to(Float32) * alpha).to(BFloat16))
                consumer.release()
                staged.publish()  # fence.proxy.async.shared::cta in every thread, then the named barrier
                if is_storer:
                    cute.copy(store_atom, sy_part[(None, buf)], gy_part[(None, tm, tn)])
                notify = self.shipper.end_tile(notify, is_storer, args, tm, tn, y.shape[1])  # wait_group 1, notify
                staged.commit()  # only moves the cursor: end_tile closed the bulk group
            self.shipper.finish(notify, is_storer)  # every store complete, end-of-stream, every release
            staged.tail()


def fake_arguments(scope: str = "sys", engine: str = "sm") -> tuple:
    """``(kernel, arguments)`` to compile with no GPU: symbolic M and N, so one compile serves every shape."""
    m, n = cute.sym_int32(), cute.sym_int32()
    x, y = (make_fake_tensor(BFloat16, (m, n), (cute.sym_int64(), 1), assumed_align=16) for _ in range(2))
    return ShipTiles(scope, engine), (x, y, Float32(1.0), Int32(1), make_fake_stream(), fake_ship_args(BFloat16))


@functools.cache
def compile_kernel(scope: str = "sys", engine: str = "sm"):
    """The kernel compiled for sm_90a (no GPU needed) for a receiver whose flags need ``scope``."""
    kernel, arguments = fake_arguments(scope, engine)
    return cute.compile(kernel, *arguments, options="--gpu-arch sm_90a")


# --- the host side (torch and a Hopper GPU) ------------------------------------------------------------------------
def tile_major(y):
    """``(M, N)`` → ``(tiles, TM, TN)``, tile ``t = tm·tiles_n + tn``: the receive buffer's layout."""
    return y.reshape(y.shape[0] // TM, TM, y.shape[1] // TN, TN).permute(0, 2, 1, 3).reshape(-1, TM, TN)


def checksums(tiles):
    """Per tile, a position-weighted sum of its bf16 bits: a stale or torn tile shows."""
    weights = torch.arange(1, TM * TN + 1, dtype=torch.int64, device=tiles.device).view(TM, TN)
    return (tiles.view(torch.int16).to(torch.int64) * weights).sum((-2, -1))


def expected(x, alpha: float):
    """What a launch with ``alpha`` ships: Y = alpha·X (fp32 product rounded to bf16), tile-major."""
    return tile_major((x.float() * alpha).to(torch.bfloat16))


class Sender:
    """The compiled kernel for one ``pipes.comm.Receiver``, its output Y and its launches' epochs."""

    def __init__(self, receiver: Receiver, m: int, n: int) -> None:
        check_input(m, n)
        self.receiver, self.epochs, self.tiles = receiver, Epochs(), m // TM * (n // TN)
        data, words = receiver.data, min(receiver.flags.numel(), receiver.credits.numel())
        if data.dtype != torch.bfloat16 or tuple(data.shape) != (self.tiles, TM, TN) or words < self.tiles:
            raise ValueError(
                f"the receiver holds {data.dtype} {tuple(data.shape)} and {words} flag/credit words: allowed "
                f"torch.bfloat16 ({self.tiles}, {TM}, {TN}) (tile-major) and a flag and a credit per tile"
            )
        self.compiled = None  # compiled at the first launch, after its arguments are checked
        self.y = torch.empty(m, n, dtype=torch.bfloat16, device=receiver.device)
        self.grid = min(self.tiles, torch.cuda.get_device_properties(receiver.device).multi_processor_count)

    def launch(self, x, alpha: float, epoch: int | None = None, credits: bool = False) -> int:
        """Ship alpha·x as launch ``epoch`` (default: the next); ``credits``: each tile waits for its credit."""
        y = self.y
        if x.dtype != y.dtype or x.shape != y.shape or x.device != y.device or not x.is_contiguous():
            got, want = f"{x.dtype} {tuple(x.shape)} on {x.device}", f"{y.dtype} {tuple(y.shape)} on {y.device}"
            raise ValueError(f"x is {got}: allowed a contiguous tensor of {want}")
        if self.compiled is None:
            self.compiled = compile_kernel(self.receiver.scope)
        epoch = self.epochs.next() if epoch is None else epoch
        xt, yt = (from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=1) for t in (x, y))
        stream = driver.CUstream(torch.cuda.current_stream(y.device).cuda_stream)
        args = ship_args(self.receiver, epoch, credits=credits)  # pointers to its data, flags, credits; the epoch
        self.compiled(xt, yt, Float32(alpha), Int32(self.grid), stream, args)
        return epoch


def ship(sender: Sender, x, alphas, delay_s: float = 0.0, timeout_s: float = 120.0, **options):
    """One launch per alpha, back to back. Returns each tile's checksum as its reader saw it, ``(launches,
    tiles)``: the host thread's (a ``TileConsumer``: as the tile's flag reaches the launch's epoch; it then
    grants the tile's credit; ``delay_s`` slows it; ``options``: the consumer's) or, on a device receiver, a later
    kernel's (-1: no flag)."""
    rx = sender.receiver
    landed = torch.zeros(len(alphas), sender.tiles, dtype=torch.int64)
    if rx.kind != "host":
        for i, alpha in enumerate(alphas):
            epoch = sender.launch(x, alpha)
            landed[i] = checksums(rx.data).where(rx.flags == as_int32(epoch), -1).cpu()
        return landed
    epochs = [sender.epochs.next() for _ in alphas]
    row = {epoch: i for i, epoch in enumerate(epochs)}

    def on_tiles(tiles, epoch: int) -> None:  # the user's callback: tiles whose flags have reached `epoch`
        landed[row[epoch], tiles] = checksums(rx.data[torch.from_numpy(tiles)])
        time.sleep(delay_s)

    consumer = TileConsumer.of(rx, epochs, on_tiles, credits=True, timeout_s=timeout_s, **options)
    consumer.start()
    for i, (epoch, alpha) in enumerate(zip(epochs, alphas, strict=True)):
        while i - consumer.completed > AHEAD and consumer.is_alive():
            time.sleep(1e-4)
        sender.launch(x, alpha, epoch, credits=True)
    consumer.join_checked(timeout_s)
    torch.cuda.synchronize()
    return landed


if __name__ == "__main__":  # the command line: examples/ship_tiles_cli.py
    from ship_tiles_cli import main

    raise SystemExit(main())
