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
from pipes.cute.comm import ChunkPushWarp, ChunkSender, PushingGateArgs

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
