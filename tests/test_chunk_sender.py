"""CPU tests of the all-gather's SM pushes (:class:`pipes.cute.comm.ChunkSender`), compiled for sm_90a:
the credit is acquired before the chunk's stores, the chunk's 16-byte stores precede its flag's fenced
system-scope release on every path."""

import os

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from ptx_check import kernel_body, path_states, unordered_flag_releases

from pipes.chunks import ChunkPlan
from pipes.cute.comm import ChunkSender, Credits, ReadyFlags, TileCopy

OPTIONS = "--gpu-arch sm_90a --keep-ptx"
PLAN = ChunkPlan(rows=1024, world=2, chunk_rows=256)
COLUMNS = 512


class _Sender:
    """A one-warp kernel: wait for the peer's credit, then push this rank's chunks to the peer."""

    def __init__(self, sender: ChunkSender, scope: str = "sys") -> None:
        self.sender, self.scope = sender, scope

    @cute.jit
    def __call__(self, src, dst, words, rank, epoch):
        self.kernel(src, dst, words, rank, epoch).launch(grid=(1, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, src, dst, words, rank, epoch):
        plan = self.sender.plan
        Credits(words + 64, "sys").wait(rank, epoch)
        first = rank * plan.chunks_per_rank
        for chunk in cutlass.range(first, first + plan.chunks_per_rank, unroll=1):
            self.sender.send(src, chunk, dst, ReadyFlags(words, self.scope), epoch)


def _ptx(sender: ChunkSender, scope: str = "sys") -> str:
    from cutlass.cute.runtime import make_fake_compact_tensor, make_ptr

    src = make_fake_compact_tensor(
        cutlass.BFloat16, (PLAN.rows_per_rank, sender.columns), stride_order=(1, 0), assumed_align=16
    )
    dst = make_ptr(cutlass.BFloat16, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)
    words = make_ptr(cutlass.Uint32, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)
    compiled = cute.compile(_Sender(sender, scope), src, dst, words, Int32(0), Int32(2), options=OPTIONS)
    return compiled.artifacts.PTX


@pytest.fixture(scope="module")
def sender_ptx() -> str:
    return _ptx(ChunkSender(PLAN, COLUMNS))


def test_chunk_is_copied_in_16_byte_vectors_then_released_at_system_scope(sender_ptx):
    assert "ld.global.cg.v4.b32" in sender_ptx and "st.global.v4.b32" in sender_ptx
    assert "fence.acq_rel.sys;" in sender_ptx and "st.release.sys.global.b32" in sender_ptx
    assert unordered_flag_releases(sender_ptx) == []
    gpu = _ptx(ChunkSender(PLAN, COLUMNS), scope="gpu")
    assert "st.release.gpu.global.b32" in gpu and "st.release.sys" not in gpu


def test_no_chunk_store_precedes_the_credit_acquire(sender_ptx):
    def transfer(ins: str, state: str) -> str:
        return "credited" if ins.startswith("ld.acquire.sys") else state

    stores = [s for i, s in path_states(kernel_body(sender_ptx), transfer, "start") if i.startswith("st.global.v4")]
    assert stores and set().union(*stores) == {"credited"}


def test_sender_tiles_must_tile_the_chunk():
    assert ChunkSender(PLAN, COLUMNS).copy == TileCopy(128, 128)
    assert ChunkSender(ChunkPlan(rows=128, world=2, chunk_rows=32), 256).copy.tile_m == 32
    with pytest.raises(ValueError, match="128×128 tiles do not tile a chunk of 256 rows × 200 columns"):
        ChunkSender(PLAN, 200)
    with pytest.raises(ValueError, match="columns = 0 is invalid"):
        ChunkSender(PLAN, 0)
