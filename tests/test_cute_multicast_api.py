"""TmaLoadPipeline + Multicast: release peers derived from the multicast (one source of truth), the
no-multicast shapes accepted, and the per-thread multi-peer release flagged (512 vs 16 arrivals)."""

from __future__ import annotations

import re
import warnings

import cute_kernels as ck
import cutlass
import cutlass.cute as cute
import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, PipesPerformanceWarning, Role, SpecError
from pipes.cute import Multicast, TmaLoadPipeline, init_pipelines


def _spec(consumer: Role) -> PipelineSpec:
    return PipelineSpec(
        "mainloop", 4, Role("load", ArrivalUnit.ELECTED_PER_WARP), consumer, Completion.TRANSACTION_BYTES, 32768
    )


def _kernel_ptx(pipe: TmaLoadPipeline, cluster: int, block: int = 384) -> str:
    """Warp 0 produces, warps 4.. consume one stage (compile only)."""

    @cute.kernel
    def kern(out: cute.Tensor):
        smem = cutlass.memory.SmemAllocator()
        init_pipelines((pipe,), allocator=smem)
        if cute.arch.warp_idx() >= 4:
            c = pipe.consumer()
            c.wait()
            c.release()
        out[0] = 1

    @cute.jit
    def launch(out: cute.Tensor, stream):
        kern(out).launch(grid=(cluster, 1, 1), block=(block, 1, 1), cluster=(cluster, 1, 1), stream=stream)

    return ck.ptx_of(ck.compile_fake(launch, ck.fake_out(4)))


def _empty_barrier_count(ptx: str, stages: int = 4) -> int:
    """The arrival count the empty barriers are initialized with (the last `stages` inits)."""
    inits = re.findall(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], (%r\d+|\d+);", ptx)
    value = inits[-1]
    if not value.isdigit():
        value = re.search(rf"mov\.b32\s+{re.escape(value)}, (\d+);", ptx).group(1)
    return int(value)


# --- one source of truth -------------------------------------------------------------------------
@pytest.mark.parametrize(("mc", "peers"), [(Multicast(2, 1), 2), (Multicast(2, 2), 3), (Multicast(1, 4, b=False), 4)])
def test_consumer_peers_are_derived_from_the_multicast(mc: Multicast, peers: int) -> None:
    pipe = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=mc)
    assert pipe.spec.consumer("mma").peers == peers
    assert pipe.empty_arrivals() == 8 * peers
    # stating the same count again is accepted (not required)
    agreeing = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8, peers=peers)), multicast=mc)
    assert agreeing.spec == pipe.spec


def test_the_checker_bridge_sees_the_derived_peers() -> None:
    from pipes.check import model_of

    pipe = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=Multicast(2, 1))
    assert model_of(pipe).spec.empty_arrivals == 16


@pytest.mark.parametrize(("cm", "cn"), [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_multicast_from_the_cluster_shape_needs_no_conditional(cm: int, cn: int) -> None:
    """Multicast(cm, cn, a=cn > 1, b=cm > 1) is valid for every shape; 1×1 means no multicast."""
    mc = Multicast(cm, cn, a=cn > 1, b=cm > 1)
    expected = (cn if cn > 1 else 0) + (cm if cm > 1 else 0) - (1 if cm > 1 and cn > 1 else 0)
    assert mc.peers == max(1, expected)
    assert bool(mc) is (mc.peers > 1)
    pipe = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=mc)
    assert pipe.spec.consumer().peers == mc.peers


def test_a_1x1_multicast_compiles_to_local_releases() -> None:
    pipe = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=Multicast(1, 1))
    ptx = _kernel_ptx(pipe, cluster=1)
    assert "mapa" not in ptx and "shared::cluster" not in ptx and "barrier.cluster" not in ptx
    assert _empty_barrier_count(ptx) == 8
    assert Multicast(2, 2, a=False, b=False).peers == 1


def test_multicast_fields_are_validated() -> None:
    with pytest.raises(SpecError, match=r"Multicast\.a = 'yes' is invalid: allowed True or False"):
        Multicast(2, 1, a="yes")
    with pytest.raises(SpecError, match=r"Multicast cluster 4×8 = 32 CTAs is invalid: allowed at most 16 CTAs"):
        Multicast(4, 8)
    with pytest.raises(SpecError, match=r"TmaLoadPipeline\('mainloop'\)\.multicast = \(2, 1\) is invalid"):
        TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=(2, 1))


# --- the efficient consumer arrival is the obvious one -----------------------------------------
def test_per_thread_multi_peer_release_warns_with_the_arithmetic_and_the_fix() -> None:
    with pytest.warns(PipesPerformanceWarning) as caught:
        TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.WARPGROUP, 2)), multicast=Multicast(2, 1))
    message = str(caught[0].message)
    assert "1 × 128 × 2" not in message and "2 × 128 × 2 = 512 remote arrivals per stage" in message
    assert "Role('mma', ArrivalUnit.ELECTED_PER_WARP, 8) makes 8 × 2 = 16" in message


def test_no_warning_for_elected_or_local_releases() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PipesPerformanceWarning)
        TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=Multicast(2, 1))
        TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.WARPGROUP, 2)))  # local: 256 cheap arrivals, no peers
        TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.WARPGROUP, 2)), multicast=Multicast(1, 1))


def test_elected_per_warp_makes_16_remote_arrivals_per_stage_where_warpgroup_makes_512() -> None:
    """2 consumer warpgroups, 2 peer CTAs: each empty barrier expects what the releases make."""
    elected = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.ELECTED_PER_WARP, 8)), multicast=Multicast(2, 1))
    ptx = _kernel_ptx(elected, cluster=2)
    assert _empty_barrier_count(ptx) == 16
    assert "mbarrier.arrive.shared::cluster" in ptx
    lane_test = r"mov\.u32\s+(%r\d+), %laneid;\s*\n\s*setp\.(?:gt|ge|lt|le)\.u32\s+%p\d+, \1, [12];"
    assert re.search(lane_test, ptx), "lanes 0..peers-1 (2 peers) each release one peer"
    with pytest.warns(PipesPerformanceWarning):
        per_thread = TmaLoadPipeline(_spec(Role("mma", ArrivalUnit.WARPGROUP, 2)), multicast=Multicast(2, 1))
    assert _empty_barrier_count(_kernel_ptx(per_thread, cluster=2)) == 512
