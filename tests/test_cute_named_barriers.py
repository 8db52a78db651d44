"""Named-barrier id allocator (pipes.cute.named_barriers): ids, errors, and the PTX it emits."""

from __future__ import annotations

import re
import tempfile

import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

from pipes import ProtocolError, SpecError
from pipes.cute.named_barriers import NamedBarrier, NamedBarrierAllocator

OPTIONS = f"--gpu-arch sm_90a --keep-ptx --dump-dir={tempfile.mkdtemp(prefix='pipes-ptx-')}"


def test_ids_start_at_one_and_zero_stays_reserved():
    alloc = NamedBarrierAllocator(block_threads=384)
    first = alloc.allocate("epilogue", 256)
    second = alloc.allocate("producer_sync", 128)
    assert (first.barrier_id, second.barrier_id) == (1, 2)
    assert alloc.holders[0].startswith("reserved: __syncthreads")
    assert alloc.holders[1] == "'epilogue' (256 threads)"
    assert 0 not in alloc.free_ids and len(alloc.free_ids) == 13


def test_exhaustion_lists_every_holder():
    alloc = NamedBarrierAllocator(block_threads=256)
    for i in range(15):
        alloc.allocate(f"b{i}", 64)
    with pytest.raises(ProtocolError) as err:
        alloc.allocate("one_too_many", 32)
    message = str(err.value)
    assert "'one_too_many'" in message and "all 16 hardware ids are taken" in message
    assert "0: reserved: __syncthreads" in message
    for i in range(15):
        assert f"{i + 1}: 'b{i}' (64 threads)" in message


def test_release_frees_the_id_for_reuse_and_double_release_fails():
    alloc = NamedBarrierAllocator(block_threads=256)
    a = alloc.allocate("a", 64)
    alloc.allocate("b", 64)
    alloc.release(a)
    assert alloc.allocate("c", 128).barrier_id == a.barrier_id
    with pytest.raises(ProtocolError, match=r"cannot release named barrier 'a': it is not held"):
        alloc.release(a)
    alloc.release("c")
    with pytest.raises(ProtocolError, match=r"Holders: 0: reserved: __syncthreads \(bar.sync 0\); 2: 'b'"):
        alloc.release("c")


def test_allocating_a_name_twice_is_an_error_naming_the_first_allocation():
    alloc = NamedBarrierAllocator(block_threads=256)
    alloc.allocate("epi", 128)
    with pytest.raises(ProtocolError, match=r"'epi' is already allocated \(id 1, 128 threads\)"):
        alloc.allocate("epi", 128)


def test_fixed_ids_and_reserved_ids():
    alloc = NamedBarrierAllocator(block_threads=384, reserved={1: "cutlass epilogue"})
    assert alloc.allocate("x", 128).barrier_id == 2
    assert alloc.allocate_id(8, "y", 256).barrier_id == 8
    with pytest.raises(ProtocolError, match=r"id 1: reserved for cutlass epilogue"):
        alloc.allocate_id(1, "z", 128)
    with pytest.raises(ProtocolError, match=r"id 8: held by 'y'"):
        alloc.allocate_id(8, "z", 128)
    with pytest.raises(ProtocolError, match=r"id 0 is already reserved for __syncthreads"):
        NamedBarrierAllocator(256, reserved={0: "mine"})
    with pytest.raises(SpecError, match=r"named barrier id = 16 is invalid: allowed an int in \[0, 15\]"):
        alloc.allocate_id(16, "z", 128)


@pytest.mark.parametrize(
    ("threads", "why"),
    [
        (100, r"not a multiple of 32 .*100 = 3×32 \+ 4"),
        (0, "fewer than one warp"),
        (512, "more than the block's 384 threads"),
        (128.0, "allowed an int"),
    ],
)
def test_thread_counts_are_checked(threads, why):
    alloc = NamedBarrierAllocator(block_threads=384)
    with pytest.raises(SpecError, match=rf"NamedBarrier\('n'\)\.threads = .*{why}"):
        alloc.allocate("n", threads)
    assert alloc.free_ids == list(range(1, 16))


def test_scoped_allocation_releases_at_the_end_of_the_phase():
    alloc = NamedBarrierAllocator(block_threads=256)
    with alloc.scoped("mainloop", 256) as bar:
        assert alloc.holders[bar.barrier_id] == "'mainloop' (256 threads)"
    assert bar.barrier_id not in alloc.holders


def test_block_threads_is_validated():
    with pytest.raises(SpecError, match=r"block_threads = 2048 is invalid: allowed \[1, 1024\]"):
        NamedBarrierAllocator(2048)


def test_sync_and_arrive_emit_the_allocated_id_and_count():
    seen: list[NamedBarrier] = []

    @cute.kernel
    def kernel(out: cute.Tensor):
        alloc = NamedBarrierAllocator(block_threads=384)
        alloc.allocate("unused", 32)
        epi = alloc.allocate("epilogue", 256)
        seen.append(epi)
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp < 4:
            epi.arrive()
        else:
            epi.sync()
            out[0] = warp
        if warp == 0:
            epi.arrive_unaligned()

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kernel(out).launch(grid=(1, 1, 1), block=(384, 1, 1), stream=stream)

    out = make_fake_compact_tensor(cutlass.Int32, (16,))
    ptx = cute.compile(launch, out, make_fake_stream(), options=OPTIONS).artifacts.PTX
    assert seen[0].barrier_id == 2
    assert re.search(r"bar\.arrive\s+2,\s*256;", ptx)
    assert re.search(r"bar\.sync\s+2,\s*256;", ptx)
    assert re.search(r"barrier\.arrive\s+2,\s*256;", ptx), "unaligned arrive: no .aligned"
    assert not re.search(r"bar(rier)?\.\S+\s+1,", ptx), "the 'unused' barrier emits nothing"
