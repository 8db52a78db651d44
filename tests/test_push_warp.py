"""CPU tests of the all-gather's pushes by a spare warp (:class:`pipes.cute.comm.ChunkPushWarp`), compiled
for sm_90a: every peer's credit is acquired before any chunk store, each chunk's stores precede its flag's
fenced system-scope release on every path, and a gate reads :class:`PushingGateArgs` as its own."""

import os

import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from ptx_check import kernel_body, path_states, unordered_flag_releases

from pipes.chunks import ChunkPlan
from pipes.comm import fake_push_gate_args
from pipes.cute.comm import ChunkPushWarp, ChunkSender, PushingGateArgs, push_items, sm_chunk_rows

OPTIONS = "--gpu-arch sm_90a --keep-ptx"
COLUMNS = 512


class _PushKernel:
    """A one-warp kernel: the push warp's whole launch."""

    def __init__(self, push: ChunkPushWarp) -> None:
        self.push = push

    @cute.jit
    def __call__(self, args: PushingGateArgs):
        self.kernel(args).launch(grid=(1, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, args: PushingGateArgs):
        self.push.run(args)


def _ptx(world: int) -> str:
    plan = ChunkPlan(rows=256 * 2 * world, world=world, chunk_rows=256)
    push = ChunkPushWarp(ChunkSender(plan, COLUMNS))
    compiled = cute.compile(_PushKernel(push), fake_push_gate_args(world, cutlass.BFloat16), options=OPTIONS)
    return compiled.artifacts.PTX


@pytest.fixture(scope="module", params=[2, 4], ids=["world2", "world4"])
def push_ptx(request) -> tuple[int, str]:
    return request.param, _ptx(request.param)


def test_every_peer_credit_is_acquired_before_any_chunk_store(push_ptx):
    world, ptx = push_ptx

    def transfer(ins: str, state: str) -> str:  # acquires seen on the path so far, counted up to the peers
        return str(min(int(state) + 1, world - 1)) if ins.startswith("ld.acquire.sys") else state

    stores = [s for i, s in path_states(kernel_body(ptx), transfer, "0") if i.startswith("st.global.v4")]
    assert stores and set().union(*stores) == {str(world - 1)}
    # a credit word per peer (its own address), all polled before the first chunk store in program order
    body = kernel_body(ptx)
    first_store = next(n for n, ins in enumerate(body) if ins.startswith("st.global.v4"))
    polled = {ins.split("[")[1] for ins in body[:first_store] if ins.startswith("ld.acquire.sys")}
    assert len(polled) == world - 1


def test_each_chunk_is_released_at_system_scope_after_its_stores(push_ptx):
    _, ptx = push_ptx
    assert "fence.acq_rel.sys;" in ptx and "st.release.sys.global.b32" in ptx
    assert unordered_flag_releases(ptx) == []


def test_the_gate_reads_its_arguments_by_name():
    assert PushingGateArgs._fields[:3] == ("flags", "rank", "value")
    assert ChunkPushWarp(ChunkSender(ChunkPlan(rows=1024, world=4, chunk_rows=128), 256)).peers == 3


@pytest.mark.parametrize("world, rows, chunk_rows, ctas", [(2, 8192, 16, 396), (4, 8192, 64, 132), (2, 1024, 128, 3)])
def test_every_push_is_dealt_to_exactly_one_warp(world, rows, chunk_rows, ctas):
    plan = ChunkPlan(rows=rows, world=world, chunk_rows=chunk_rows)
    dealt = [item for cta in range(ctas) for item in push_items(plan, cta, ctas)]
    everything = [(i, j) for i in range(world - 1) for j in range(plan.chunks_per_rank)]
    assert sorted(dealt) == everything
    busiest = max(len(push_items(plan, cta, ctas)) for cta in range(ctas))
    assert busiest == -(-len(everything) // ctas)  # round-robin: no CTA more than one item above another


def test_the_push_warp_deals_by_the_grid(push_ptx):
    _, ptx = push_ptx
    assert "%nctaid.x" in ptx and "%ctaid.x" in ptx


def test_sm_chunks_leave_about_one_push_per_cta():
    assert sm_chunk_rows(8192, 2, 132) == 32  # 4096 rows to 1 peer: 128 pushes of 32 rows
    assert sm_chunk_rows(8192, 4, 132) == 64  # 2048 rows to 3 peers: 96 pushes of 64 rows
    assert sm_chunk_rows(8192, 2, 396) == 16  # 3 warps × 132 CTAs: 256 pushes of 16 rows
    assert sm_chunk_rows(16384, 2, 396) == 32  # 16 rows would be 1024 chunks, more than a gate remembers
    assert sm_chunk_rows(16384, 2, 66) == 128
    with pytest.raises(ValueError, match="does not divide a rank's 4000 rows"):
        sm_chunk_rows(8000, 2, 16)
    with pytest.raises(ValueError, match="worker = 5 of workers = 4"):
        push_items(ChunkPlan(rows=1024, world=2, chunk_rows=128), 5, 4)


def test_push_warps_check_the_gate_they_feed():
    from pipes.cute.comm import GateSpec

    plan = ChunkPlan(rows=1024, world=2, chunk_rows=128)
    push = ChunkPushWarp(ChunkSender(plan, COLUMNS), warps=2)
    push.check_feeds(GateSpec(plan, tile_m=128, exact=False))
    with pytest.raises(ValueError, match="ChunkPushWarp.warps = 2: the producer warpgroup has 1 warps"):
        push.check_feeds(GateSpec(plan, tile_m=128, exact=False), spare_warps=1)
    with pytest.raises(ValueError, match="a push warp needs a gate"):
        push.check_feeds(None)
    with pytest.raises(ValueError, match="allowed one plan"):
        push.check_feeds(GateSpec(ChunkPlan(rows=1024, world=2, chunk_rows=256), tile_m=128, exact=False))
    with pytest.raises(ValueError, match=r"\(GateSpec\(exact=False\)\)"):
        push.check_feeds(GateSpec(plan, tile_m=128))
