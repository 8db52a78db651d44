"""CPU tests of pipes.cute.sm100: declarations (counts derived from roles and the cluster), sm_100a PTX facts.

Every kernel here is compiled for sm_100a on the CPU (no Blackwell GPU exists here); nothing is run. The
PTX checks are made on the control-flow graph (tests/ptx_check.py) where an ordering matters, and each one
that could pass vacuously also runs on a planted-defect kernel that it must reject.
"""

from __future__ import annotations

import re

import cute_kernels as ck
import cute_kernels_sm100 as bw
import pytest
from cutlass import Int32
from ptx_check import kernel_body, path_states

from pipes import ArrivalUnit, Completion, PipelineSpec, Role, SpecError
from pipes.cute.sm100 import (
    CLC_RESPONSE_BYTES,
    ClcFetchPipeline,
    TmaUmmaPipeline,
    TmemAllocation,
    UmmaAccPipeline,
    UmmaCluster,
)

SOLO = UmmaCluster()
PAIR = UmmaCluster(2, 1, cta_group=2)
PAIRS_2X2 = UmmaCluster(2, 2, cta_group=2)


@pytest.fixture(scope="module")
def ptx() -> dict[str, str]:
    return {name: bw.compile_protocol(c) for name, c in (("solo", SOLO), ("pair", PAIR), ("pairs_2x2", PAIRS_2X2))}


def count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, "\n".join(kernel_body(ptx))))


# --- declarations --------------------------------------------------------------------------------------
def test_cluster_derives_commit_peers_and_masks() -> None:
    # The stock kernel's consumer count: num_mcast_ctas_a + num_mcast_ctas_b - 1.
    assert (SOLO.mma_peers, PAIR.mma_peers, PAIRS_2X2.mma_peers) == (1, 1, 2)
    assert UmmaCluster(4, 2, cta_group=2).mma_peers == 2 + 2 - 1
    assert UmmaCluster(4, 2, cta_group=2, multicast=False).mma_peers == 1
    # A commit reaches both CTAs of the pair, and every CTA sharing the A (row) or B (column) tile.
    assert PAIR.static_commit_mask(0) == 0b11
    assert PAIRS_2X2.static_commit_mask(0) == 0b1111
    assert UmmaCluster(4, 2, cta_group=2).static_commit_mask(3) == 0b1100_1111
    assert UmmaCluster(2, 2, cta_group=1).static_commit_mask(3) == 0b1110


def test_cluster_rejects_a_split_pair() -> None:
    with pytest.raises(SpecError, match=r"cluster_m = 3 is invalid with cta_group=2: allowed a multiple of 2"):
        UmmaCluster(3, 1, cta_group=2)
    with pytest.raises(SpecError, match=r"cta_group = 4 is invalid"):
        UmmaCluster(4, 1, cta_group=4)
    with pytest.raises(SpecError, match=r"8×4 = 32 CTAs is invalid"):
        UmmaCluster(8, 4)


def test_tma_umma_counts_one_commit_per_sharing_leader() -> None:
    spec = bw.protocol_specs()["ab"]
    pipe = TmaUmmaPipeline(spec, cluster=PAIRS_2X2)
    assert pipe.spec.consumers[0].peers == 2
    assert (pipe.full_arrivals(), pipe.empty_arrivals()) == (1, 2)
    assert pipe.cluster_size == 4


def test_tma_umma_rejects_a_consumer_that_is_not_one_committing_thread() -> None:
    spec = PipelineSpec(
        "ab",
        2,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.WARP),
        Completion.TRANSACTION_BYTES,
        64,
    )
    with pytest.raises(SpecError, match=r"one arrival per call \(count × 32 = 32 per stage declared\)"):
        TmaUmmaPipeline(spec)


def test_tma_umma_rejects_a_stated_peer_count_that_contradicts_the_cluster() -> None:
    spec = PipelineSpec(
        "ab",
        2,
        Role("tma", ArrivalUnit.ELECTED_PER_WARP),
        Role("mma", ArrivalUnit.ELECTED_PER_WARP, peers=3),
        Completion.TRANSACTION_BYTES,
        64,
    )
    with pytest.raises(SpecError, match=r"has 2 \+ 1 − 1 = 2 MMA issuer\(s\)"):
        TmaUmmaPipeline(spec, cluster=PAIRS_2X2)


def test_acc_pipeline_counts_both_epilogues_of_the_pair() -> None:
    acc = UmmaAccPipeline(bw.protocol_specs()["acc"], cluster=PAIR)
    assert (acc.full_arrivals(), acc.empty_arrivals()) == (1, bw.EPI_WARPS * 2)
    assert UmmaAccPipeline(bw.protocol_specs()["acc"]).empty_arrivals() == bw.EPI_WARPS
    two_commits = PipelineSpec("acc", 2, Role("mma", ArrivalUnit.ELECTED_PER_WARP, 2), Role("epi"))
    with pytest.raises(SpecError, match=r"count=2 × ELECTED_PER_WARP commits with tcgen05.commit"):
        UmmaAccPipeline(two_commits)


def test_clc_counts_every_cta_on_cta_zero() -> None:
    clc = ClcFetchPipeline(bw.protocol_specs()["sched"], cluster_size=2)
    # tma 1 + mma 1 + epi 4 + scheduler 1 = 7 elected warps per CTA, 2 CTAs, all on CTA 0's barrier.
    assert (clc.full_arrivals(), clc.empty_arrivals()) == (1, 7 * 2)
    assert clc.smem_words == 2 * 2 + 2 * 2 + 1
    bad_bytes = PipelineSpec("s", 2, Role("clc"), Role("r"), Completion.TRANSACTION_BYTES, 32)
    with pytest.raises(SpecError, match=r"tx_bytes = 32 is invalid: allowed 16"):
        ClcFetchPipeline(bad_bytes)
    one_thread = PipelineSpec("s", 2, Role("clc"), Role("r"), Completion.TRANSACTION_BYTES, CLC_RESPONSE_BYTES)
    with pytest.raises(SpecError, match=r"2 CTA\(s\) need 2 lane\(s\)"):
        ClcFetchPipeline(one_thread, cluster_size=2)


def test_tmem_allocation_rules() -> None:
    with pytest.raises(SpecError, match=r"columns = 96 is invalid: allowed a power of two in \[32, 512\]"):
        TmemAllocation(96, "epi", ("mma", "epi"))
    with pytest.raises(SpecError, match=r"allocator = 'tma' is invalid"):
        TmemAllocation(128, "tma", ("mma", "epi"))
    layout = bw.build_protocol_kernel(SOLO)[1]["layout"]
    assert TmemAllocation(128, "epi", ("mma", "epi")).threads(layout) == 32 * (1 + bw.EPI_WARPS)


# --- sm_100a PTX ---------------------------------------------------------------------------------------
def test_compiles_for_sm100a(ptx: dict[str, str]) -> None:
    for text in ptx.values():
        assert re.search(r"^\.target sm_100a", text, re.M)


def test_a_one_cta_cluster_multicasts_the_mainloop_commit_only() -> None:
    # cluster 2×1 with cta_group::1: the mainloop commit reaches both CTAs (B is shared along the column);
    # the accumulator commit stays in the CTA (its epilogue is the only reader).
    text = bw.compile_protocol(UmmaCluster(2, 1))
    assert (
        count(text, r"tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one\.shared::cluster\.multicast::cluster") == 1
    )
    assert count(text, r"tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one\.shared::cluster\.b64") == 1


def test_mma_releases_are_tcgen05_commits(ptx: dict[str, str]) -> None:
    # One commit releases the mainloop stage, one fills the accumulator stage; elected, never per lane.
    assert count(ptx["solo"], r"tcgen05\.commit\.cta_group::1\.mbarrier::arrive::one\.shared::cluster\.b64") == 2
    for name in ("pair", "pairs_2x2"):
        assert (
            count(ptx[name], r"tcgen05\.commit\.cta_group::2\.mbarrier::arrive::one\.shared::cluster\.multicast") == 2
        )
        assert count(ptx[name], r"tcgen05\.commit\.cta_group::1") == 0
    # The planted defect "a missing tcgen05.commit": the mainloop's release is gone.
    missing = bw.compile_protocol(SOLO, mma_commits=False)
    assert count(missing, r"tcgen05\.commit") == 1


def test_only_the_leader_arms_the_pairs_stage(ptx: dict[str, str]) -> None:
    # Solo: the mainloop arms its own barrier, the CLC scheduler its own: 2 local expect_tx.
    assert count(ptx["solo"], r"mbarrier\.arrive\.expect_tx\.shared\.b64") == 2
    # Pair: the mainloop's arming is under the leader predicate (one local expect_tx); the CLC lanes arm
    # every CTA's barrier remotely.
    assert count(ptx["pair"], r"mbarrier\.arrive\.expect_tx\.shared\.b64") == 1
    assert count(ptx["pair"], r"mbarrier\.arrive\.expect_tx\.shared::cluster\.b64") == 1


def test_pair_epilogues_release_on_the_leader(ptx: dict[str, str]) -> None:
    # acc release (epilogue) and the four CLC releases go to another CTA's barrier, at cluster scope (the
    # default .release.cta would not synchronize with the leader's waiting thread).
    assert count(ptx["solo"], r"mbarrier\.arrive\.shared\.b64") == 5
    for name in ("pair", "pairs_2x2"):
        assert count(ptx[name], r"mbarrier\.arrive\.shared\.b64") == 0
        assert count(ptx[name], r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64") == 5
        assert count(ptx[name], r"mbarrier\.arrive\.shared::cluster\.b64") == 0


def _clc_transfer(ins: str, state: str) -> str:
    if "clusterlaunchcontrol.query_cancel" in ins:
        return "read"
    if ins.startswith("fence.proxy.async.shared::cta"):
        return "fenced"
    return state


def unfenced_clc_releases(ptx: str) -> list[str]:
    """Arrivals some path reaches after reading a CLC response without the proxy fence since."""
    return [
        ins
        for ins, states in path_states(kernel_body(ptx), _clc_transfer, "none")
        if ins.startswith("mbarrier.arrive.") and "expect_tx" not in ins and "read" in states
    ]


def test_clc_release_is_fenced_after_reading_the_response(ptx: dict[str, str]) -> None:
    for text in ptx.values():
        assert count(text, r"clusterlaunchcontrol\.try_cancel\.async\.shared::cta\.mbarrier::complete_tx::bytes") == 1
        assert unfenced_clc_releases(text) == []
    # The checker itself: drop the fences and it must complain.
    assert unfenced_clc_releases(re.sub(r"fence\.proxy\.async\.shared::cta;", "nop;", ptx["solo"]))


def test_store_notify_compiles_for_sm100a_and_publishes_only_complete_stores() -> None:
    built = ck.build_store_notify(stages=3, lag=1)
    text = bw.compile_sm100(
        built.launcher, ck.fake_out(2 * 3 * ck.TILE, ck.TILE), ck.fake_out(2, 1, 32, 2), Int32(10), Int32(0)
    )
    assert re.search(r"^\.target sm_100a", text, re.M)
    body = kernel_body(text)
    # The hand-off waits for the stores' global writes (wait_group without .read) before it notifies.
    assert any(re.match(r"cp\.async\.bulk\.wait_group\s+\d", ins) for ins in body)

    def transfer(ins: str, state: str) -> str:
        if ins.startswith("cp.async.bulk.commit_group"):
            return "committed"
        if ins.startswith("cp.async.bulk.wait_group") and not ins.startswith("cp.async.bulk.wait_group.read"):
            return "complete"
        return state

    def early(ptx_body: list[str]) -> list[str]:
        return [
            ins
            for ins, states in path_states(ptx_body, transfer, "none")
            if ins.startswith("mbarrier.arrive.") and "expect_tx" not in ins and "committed" in states
        ]

    assert early(body) == []
    # The ".read-then-flag" defect (the stock GEMM + reduce-scatter drain): the check must see it.
    read_only = [re.sub(r"^cp\.async\.bulk\.wait_group\s", "cp.async.bulk.wait_group.read ", i) for i in body]
    assert early(read_only)


def test_debug_mode_bounds_every_sm100_wait() -> None:
    """Debug mode: each wait is a bounded spin on the global timer that reports its site and traps."""
    plain = bw.compile_protocol(PAIR)
    debug = bw.compile_protocol(PAIR, debug=True)
    assert "trap;" not in plain and "globaltimer" not in plain
    assert "trap;" in debug and "globaltimer" in debug
    for site in (
        "pipeline=ab role=tma op=acquire",
        "pipeline=acc role=epi op=wait",
        "pipeline=sched role=clc op=acquire",
    ):
        assert site in _printf_strings(debug), site


def _printf_strings(ptx: str) -> str:
    """The PTX's global byte strings, decoded (cute.printf formats live there)."""
    out = []
    for body in re.findall(r"\.global \.align \d+ \.b8 \w+\[\d+\] = \{([\d, ]+)\};", ptx):
        out.append(bytes(int(b) for b in body.split(",")).decode("latin-1"))
    return "\n".join(out)
