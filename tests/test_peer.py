"""The two-GPU reduce-scatter (tile_comm.peer, examples/tp_gemm_rs.py) on the CPU: what can be checked
without two GPUs — the row rotation, the shape rules, the compiled kernels' ordering instructions."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import pytest


def test_rotation_puts_the_other_ranks_block_first():
    torch = pytest.importorskip("torch")
    from tile_comm.peer import rotate_rows

    a = torch.arange(8).view(8, 1)
    assert rotate_rows(a, 0).flatten().tolist() == [4, 5, 6, 7, 0, 1, 2, 3]  # rank 0 owns rows 0-3
    assert rotate_rows(a, 1).flatten().tolist() == [0, 1, 2, 3, 4, 5, 6, 7]  # rank 1 owns rows 4-7


def test_the_first_row_block_is_computed_first():
    # Raster "n" walks bands of cluster rows: every tile of block 0 comes before any tile of block 1.
    from tile_comm.peer import PEER_GEMM

    from pipes.tile_order import TileOrder

    order = TileOrder(PEER_GEMM.cluster_m, PEER_GEMM.cluster_n, PEER_GEMM.raster, PEER_GEMM.group)
    tiles_m, tiles_n = 8192 // PEER_GEMM.tile_m, 8192 // PEER_GEMM.tile_n
    cm, cn = order.cluster_grid(tiles_m, tiles_n)
    rows = [order.cta_tile(i, cm, cn, 0, 0)[0] for i in range(cm * cn)]
    half = tiles_m // 2
    assert max(i for i, r in enumerate(rows) if r < half) < min(i for i, r in enumerate(rows) if r >= half)


def test_shapes_that_split_a_tile_are_refused():
    from tile_comm.peer import PEER_GEMM, check_shape

    check_shape(8192, 8192, PEER_GEMM)
    with pytest.raises(ValueError, match=r"M = 1000 is invalid .* multiple of 512"):
        check_shape(1000, 8192, PEER_GEMM)
    with pytest.raises(ValueError, match=r"N = 100 is invalid"):
        check_shape(8192, 100, PEER_GEMM)


def test_peer_receivers_are_not_allocated_locally():
    torch = pytest.importorskip("torch")
    from tile_comm.config import Transport
    from tile_comm.receiver import Receiver

    with pytest.raises(ValueError, match="symmetric memory"):
        Receiver.create(Transport.PEER, 512, 512, (256, 128), torch.bfloat16, "cpu")


def test_the_peer_kernel_ships_one_row_block_with_system_scope_releases():
    from hopper_gemm.config import Problem
    from tile_comm.build import fused_resources
    from tile_comm.config import CommConfig, Transport
    from tile_comm.peer import PEER_GEMM, WORLD

    r = fused_resources(PEER_GEMM, Problem("bf16"), CommConfig(Transport.PEER, ship_blocks=WORLD, unroll=8))
    assert r.spill_bytes == 0
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+56", r.ptx)  # 8 loads in flight need the room
    assert re.search(r"st\.release\.sys\.global", r.ptx) and "fence.acq_rel.sys" in r.ptx
    everything = fused_resources(PEER_GEMM, Problem("bf16"), CommConfig(Transport.PEER, unroll=8))
    assert r.ptx != everything.ptx  # the block filter is code


def test_the_owner_waits_with_system_scope_acquires_and_a_bounded_poll():
    import cutlass.cute as cute
    from tile_comm.await_flags import AwaitFlags, fake_args

    ptx = cute.compile(AwaitFlags(), *fake_args(), options="--gpu-arch sm_90a --keep-ptx").artifacts.PTX
    assert "ld.acquire.sys.global" in ptx
    assert "trap;" in ptx and "%globaltimer" in ptx  # a flag that never comes fails instead of hanging


def test_the_cross_gpu_flag_chain_needs_a_system_scope_release():
    """The chain the peer transport relies on, in pipes.check: a tile stored, its flag released, read
    by an agent on the other device. A GPU-scope release does not reach that reader."""
    from pipes.check import Scope, check
    from pipes.check.catalogue import epilogue_comm

    clean = check(epilogue_comm(transport="peer", release=Scope.SYSTEM))
    assert clean.ok and clean.exhaustive, str(clean)
    narrow = check(epilogue_comm(transport="peer", release=Scope.GPU))
    assert not narrow.ok


def test_the_copy_engine_peer_gemm_finishes_the_other_block_first_in_whole_row_bands():
    """Raster "m" over full-width bands: each step is one row band of C, and the steps of block 0 (the other
    rank's rows) come first in the walk, numbered 0 … half − 1: the shipper plans exactly those."""
    from tile_comm.peer import copy_engine_config

    from pipes.comm import plan_steps
    from pipes.tile_order import TileOrder

    m = n = 8192
    config = copy_engine_config(n)
    assert (config.raster, config.group) == ("m", n // config.tile_n // config.cluster_n)
    order = TileOrder.of(config)
    tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
    cm, cn = order.cluster_grid(tiles_m, tiles_n)
    rows = [order.cta_tile(i, cm, cn, 0, 0)[0] for i in range(cm * cn)]
    half = tiles_m // 2
    assert max(i for i, r in enumerate(rows) if r < half) < min(i for i, r in enumerate(rows) if r >= half)
    steps = plan_steps(order, m // 2, n, (config.tile_m, config.tile_n), 2, n)
    assert [s.index for s in steps] == list(range(half))
    assert all(s.width_bytes == n * 2 and s.rows == config.tile_m for s in steps)  # contiguous bands
    assert [s.src_offset for s in steps] == [s.dst_offset for s in steps]  # same rows, same place
    # Two bands per step (the default STEP_ROWS): half the copies and flags, still contiguous.
    deep = plan_steps(replace(order, step_depth=2), m // 2, n, (config.tile_m, config.tile_n), 2, n)
    assert [s.index for s in deep] == list(range(half // 2))
    assert all(s.rows == 2 * config.tile_m and s.dst_offset == 2 * config.tile_m * n * 2 * s.index for s in deep)
    with pytest.raises(ValueError, match="at most 64"):
        copy_engine_config(64 * 256 + 256)


def test_the_copy_engine_peer_kernel_counts_block_0_only():
    from hopper_gemm.config import Problem
    from tile_comm.build import fused_resources
    from tile_comm.config import CommConfig, Transport
    from tile_comm.peer import WORLD, copy_engine_config

    config = copy_engine_config(8192)
    r = fused_resources(config, Problem("bf16"), CommConfig(Transport.PEER, ship_blocks=WORLD, engine="copy"))
    assert r.spill_bytes == 0
    assert re.search(r"red\.release\.sys\.global\.add\.u32", r.ptx)
    assert "st.global.v4" not in r.ptx  # no tile bytes leave through the SMs
    everything = fused_resources(config, Problem("bf16"), CommConfig(Transport.PEER, engine="copy"))
    assert r.ptx != everything.ptx  # the block filter is code


def test_the_owner_epilogue_waits_for_each_band_then_adds_it():
    """``CommConfig.adds_received``: before a tile of its own block, lane 0 of each math warp polls the
    band's inbox flag with ``ld.acquire.sys`` (bounded: a trap after the timeout), the warp syncs, and only
    then does every thread read the other rank's partial (one 4-byte load per accumulator pair)."""
    from hopper_gemm.config import Problem
    from tile_comm.build import fused_resources
    from tile_comm.config import CommConfig, Transport
    from tile_comm.peer import STEP_ROWS, WORLD, copy_engine_config

    config = copy_engine_config(8192)

    def build(adds: bool, step_rows: int = 1):
        comm = CommConfig(Transport.PEER, ship_blocks=WORLD, engine="copy", adds_received=adds, step_rows=step_rows)
        return fused_resources(config, Problem("bf16"), comm)

    adds, plain = build(True), build(False)
    deep = build(True, STEP_ROWS)  # the default: two bands per step (a different step map, the same poll)
    assert deep.spill_bytes == 0 and not deep.wgmma_serialized and deep.ptx != adds.ptx
    assert adds.spill_bytes == 0, adds.line()
    # The timeout path traps without printf: a call anywhere in the kernel makes ptxas serialize every
    # wgmma (C7510), which measured the mainloop 10 % slower on 2×H200.
    assert not adds.wgmma_serialized and not plain.wgmma_serialized
    body = re.sub(r"//.*", "", adds.ptx)
    loads = [m.start() for m in re.finditer(r"ld\.global\.v2\.b16", body)]
    assert len(loads) == config.acc_registers // 2  # every accumulator gets its received value, in pairs
    acquire = body.find("ld.acquire.sys.global.b32")
    assert 0 <= acquire < loads[0]
    assert "bar.warp.sync" in body[acquire : loads[0]]  # the other lanes read only after the poller's acquire
    assert "trap;" in body[acquire : loads[0]] and "%globaltimer" in body[acquire : loads[0]]
    assert "ld.acquire.sys" not in plain.ptx and "ld.global.v2.b16" not in plain.ptx


def test_the_owner_awaits_the_step_the_other_rank_raises_for_each_tile():
    """The inbox flag of each tile of this rank's block is the step in which the other rank's walk (over
    its own rotated C, whose first block is this rank's) computed those rows: the flag its shipper raises."""
    from tile_comm.config import CommConfig
    from tile_comm.peer import copy_engine_config
    from tile_comm.role import inbox_step, own_block_start, shipping_order

    from pipes.comm import step_of_tiles

    for (m, n), depth in itertools.product(((8192, 8192), (4096, 2048), (2048, 2048), (2560, 2048)), (1, 2, 3)):
        config = copy_engine_config(n)
        order = shipping_order(CommConfig("peer", engine="copy", ship_blocks=2, step_rows=depth), config)
        assert order.step_depth == depth
        tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
        cm, cn = order.cluster_grid(tiles_m, tiles_n)
        sender = step_of_tiles(order, tiles_m, tiles_n)  # tile of the sender's C → the flag it raises
        half = own_block_start(order, cm)
        assert half == tiles_m // 2
        for tm in range(half, tiles_m):
            for tn in range(tiles_n):
                assert inbox_step(order, tm, tn, cm, cn) == sender[(tm - half) * tiles_n + tn]


def test_the_epilogue_reduction_needs_the_copy_engine_to_a_peer():
    from tile_comm.config import CommConfig
    from tile_comm.peer import TensorParallelGemmRS

    for bad in (dict(transport="host", engine="copy"), dict(transport="peer", engine="sm", ship_blocks=2)):
        with pytest.raises(ValueError, match="adds_received = True is invalid"):
            CommConfig(adds_received=True, **bad)
    with pytest.raises(ValueError, match="ship_blocks 1"):
        CommConfig("peer", engine="copy", adds_received=True)
    with pytest.raises(ValueError, match="reduce = 'later' is invalid"):
        TensorParallelGemmRS(None, None, 0, reduce="later")
    with pytest.raises(ValueError, match="needs engine 'copy'"):
        TensorParallelGemmRS(None, None, 0, engine="sm", reduce="epilogue")


def test_the_two_gpu_launch_protocol_passes_the_checker_and_planted_defects_do_not():
    """tile_comm.protocol_peer: both ranks' launching streams, kernels and copy engines over back-to-back
    launches. The binary credit, the per-launch counter reset and flag-after-data are each necessary:
    without any one of them the checker finds an overwrite or a read of data not yet written; the flags'
    two alternating tokens are proven never confused (one token for all launches is)."""
    from tile_comm.protocol_peer import PEER_BUGS, check_reduce_scatter

    for launches, bands, streams in ((2, 2, 1), (3, 2, 1), (2, 3, 1), (2, 2, 2), (3, 2, 2)):
        report = check_reduce_scatter(launches, bands, streams=streams)
        assert report.ok and report.exhaustive, str(report)
    kinds = {bug: {f.kind.name for f in check_reduce_scatter(2, 2, bug, streams=2).findings} for bug in PEER_BUGS}
    # A credit given before the data was read: the checker names the lost credit itself (the grant and the
    # sender's clear are two unordered stores to one word) or the overwrite it lets through.
    assert kinds["credit_before_flags"] & {"FLAG_RACE", "OVERWRITE_UNRELEASED"}
    assert "OVERWRITE_UNRELEASED" in kinds["no_credit"]
    assert "READ_UNCOMMITTED" in kinds["flag_before_data"]
    assert "READ_UNCOMMITTED" in kinds["no_reset"]  # a stale count ships C before this launch wrote it
    # One flag value for every launch: launch 2's owner takes launch 1's flag and adds launch 1's band.
    assert "AGENT_ERROR" in kinds["one_token"] or "READ_UNCOMMITTED" in kinds["one_token"], kinds["one_token"]
    with pytest.raises(ValueError, match="bug = 'typo' is invalid"):
        check_reduce_scatter(2, 2, "typo")


def test_the_example_refuses_cleanly_without_two_gpus(capsys):
    """On a CPU-only machine (no torch, or no GPUs) the two-GPU example says why in one line, exit 2."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("two GPUs here: the example runs instead")
    import tp_gemm_rs

    assert tp_gemm_rs.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the two-GPU reduce-scatter needs") and err.count("\n") == 1
