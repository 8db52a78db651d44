"""The reduce-scatter over 2 or more GPUs (tile_comm.peer, examples/tp_gemm_rs.py) on the CPU: what can be
checked without the GPUs — the row rotation, which rank's rows go where, the shape rules, the compiled
kernels' ordering instructions."""

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


def test_four_ranks_rotate_the_next_ranks_blocks_first_and_their_own_last():
    torch = pytest.importorskip("torch")
    from tile_comm.peer import rotate_rows

    a = torch.arange(8).view(8, 1)  # four blocks of two rows
    assert rotate_rows(a, 1, 4).flatten().tolist() == [4, 5, 6, 7, 0, 1, 2, 3]
    assert rotate_rows(a, 3, 4).flatten().tolist() == [0, 1, 2, 3, 4, 5, 6, 7]


def test_at_each_position_every_rank_ships_to_a_different_rank():
    """Each GPU receives from one sender at a time, and the own block comes last."""
    from tile_comm.peer import block_order

    assert block_order(1, 4) == [2, 3, 0, 1]
    for p in range(3):
        assert sorted(block_order(r, 4)[p] for r in range(4)) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="rank 4 of world 4"):
        block_order(4, 4)


@pytest.mark.parametrize("world", [2, 3, 4, 8])
def test_every_sender_writes_the_slot_and_flag_its_receiver_awaits(world):
    """Sender s ships the block at position p of its rotated C to rank ``block_order(s)[p]``: the copy step
    goes to target p (``plan_steps(block_rows=…)``) and raises flag ``step`` there. The receiver's epilogue,
    for each tile of its own block and each slot, waits for ``inbox_step`` and reads ``inbox_row``: they
    must name that same flag and row, and ``inbox_slot`` the same slot."""
    from tile_comm.config import CommConfig
    from tile_comm.peer import block_order, copy_engine_config
    from tile_comm.role import inbox_row, inbox_slot, inbox_step, own_block_start, shipping_order

    from pipes.comm import plan_steps, step_of_tiles

    n = 2048
    config = copy_engine_config(n)
    for depth in (1, 2):
        m = world * config.tile_m * depth * 2
        comm = CommConfig("peer", engine="copy", ship_blocks=world, step_rows=depth)
        order = shipping_order(comm, config)
        tiles_m, tiles_n = m // config.tile_m, n // config.tile_n
        cm, cn = order.cluster_grid(tiles_m, tiles_n)
        block_tiles = tiles_m // world
        steps = plan_steps(order, comm.shipped_rows(m), n, (config.tile_m, config.tile_n), 2, n, block_rows=m // world)
        target_of_flag = {s.index: s.target for s in steps}
        sender_step = step_of_tiles(order, tiles_m, tiles_n)  # tile of the sender's C → the flag it raises
        own = own_block_start(order, cm, world)
        assert own == (world - 1) * block_tiles
        for receiver in range(world):
            for sender in set(range(world)) - {receiver}:
                slot = inbox_slot(sender, receiver, world)
                assert block_order(sender, world)[slot] == receiver
                for tm in range(own, tiles_m):
                    row = inbox_row(tm, own, world, slot)
                    assert row == slot * block_tiles + tm - own  # where the sender computed these rows
                    for tn in range(tiles_n):
                        flag = inbox_step(order, tm, tn, cm, cn, world, slot)
                        assert flag == sender_step[row * tiles_n + tn]
                        assert target_of_flag[flag] == slot
        assert len(steps) == (world - 1) * len({sender_step[t] for t in range(block_tiles * tiles_n)})


def test_a_copy_step_across_two_row_blocks_is_refused():
    from tile_comm.config import CommConfig
    from tile_comm.peer import check_shape, copy_engine_config
    from tile_comm.role import shipping_order

    from pipes.comm import plan_steps

    config = copy_engine_config(2048)
    order = shipping_order(CommConfig("peer", engine="copy", ship_blocks=4, step_rows=2), config)
    with pytest.raises(ValueError, match="across blocks of 256 rows"):
        plan_steps(order, 768, 2048, (config.tile_m, config.tile_n), 2, 2048, block_rows=256)
    with pytest.raises(ValueError, match=r"M = 3072 is invalid .* over 4 GPUs: allowed a multiple of 2048"):
        check_shape(3072, 2048, config, world=4, step_rows=2)
    check_shape(4096, 2048, config, world=4, step_rows=2)


@pytest.mark.parametrize(
    ("m", "world", "bands"), [(8192, 4, 4), (4096, 4, 4), (2048, 4, 2), (1024, 4, 1), (8192, 2, 4), (3072, 2, 2)]
)
def test_copy_steps_take_the_deepest_bands_every_row_block_holds(m, world, bands):
    """Unless told otherwise a copy step is 4 row bands (16 MiB at N = 8192), halved until every rank's
    row block is whole steps, so the default never refuses a shape that smaller steps would take."""
    from tile_comm.peer import STEP_ROWS, check_shape, copy_engine_config, step_rows_for

    config = copy_engine_config(2048)
    assert STEP_ROWS == 4
    assert step_rows_for(m, config, world) == bands
    check_shape(m, 2048, config, world, bands)
    if bands < STEP_ROWS:
        with pytest.raises(ValueError, match=f"M = {m} is invalid"):
            check_shape(m, 2048, config, world, bands * 2)


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


def test_the_four_gpu_owner_epilogue_awaits_and_adds_three_partials():
    """``ship_blocks = 4``: the owner's epilogue adds three partials per accumulator pair, slot by slot in the
    order they arrive: each slot's flag polled (lane 0), the warp synced, that slot's partial loaded, and
    only then the next slot's flag polled; still no spills, no serialized wgmma."""
    from hopper_gemm.config import Problem
    from tile_comm.build import fused_resources
    from tile_comm.config import CommConfig, Transport
    from tile_comm.peer import STEP_ROWS, copy_engine_config

    config = copy_engine_config(8192)
    comm = CommConfig(Transport.PEER, ship_blocks=4, engine="copy", adds_received=True, step_rows=STEP_ROWS)
    four = fused_resources(config, Problem("bf16"), comm)
    two = fused_resources(config, Problem("bf16"), replace(comm, ship_blocks=2))
    assert four.spill_bytes == 0 and not four.wgmma_serialized, four.line()
    body = re.sub(r"//.*", "", four.ptx)
    loads = [m.start() for m in re.finditer(r"ld\.global\.v2\.b16", body)]
    assert len(loads) == 3 * (config.acc_registers // 2)
    polls = [m.start() for m in re.finditer(r"ld\.acquire\.sys\.global\.b32", body)]
    two_polls = len(re.findall(r"ld\.acquire\.sys\.global\.b32", re.sub(r"//.*", "", two.ptx)))
    assert len(polls) == 3 * two_polls  # one bounded poll loop per slot
    per_slot = config.acc_registers // 2
    for slot in range(3):
        slot_polls = polls[slot * two_polls : (slot + 1) * two_polls]
        first_load = loads[slot * per_slot]
        assert max(slot_polls) < first_load and "bar.warp.sync" in body[max(slot_polls) : first_load]
        if slot:  # the previous slot's partial is read (and added) before this slot is awaited
            assert loads[(slot - 1) * per_slot] < min(slot_polls)


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


@pytest.mark.slow
def test_the_two_gpu_launch_protocol_passes_the_checker_and_planted_defects_do_not():
    """tile_comm.protocol_peer: both ranks' launching streams, kernels and copy engines over back-to-back
    launches. The binary credit, the per-launch counter reset and flag-after-data are each necessary:
    without any one of them the checker finds an overwrite or a read of data not yet written; the flags'
    two alternating tokens are proven never confused (one token for all launches is)."""
    from tile_comm.protocol_peer import PEER_BUGS, check_reduce_scatter

    for launches, bands, streams in ((2, 2, 1), (3, 2, 1), (2, 3, 1), (2, 2, 2), (3, 2, 2)):
        report = check_reduce_scatter(launches, bands, streams=streams)
        assert report.ok and report.exhaustive, str(report)
    # Each planted defect's first finding (breadth-first: along a shortest schedule) is the one it causes.
    kinds = {
        bug: {f.kind.name for f in check_reduce_scatter(2, 2, bug, streams=2, max_findings=1).findings}
        for bug in PEER_BUGS
    }
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


def test_the_double_buffered_inbox_passes_the_checker_and_needs_its_flags_cleared():
    """Two inboxes per rank, launch e into inbox e % 2 with its own flags and credits: four back-to-back
    launches (each inbox used twice) pass exhaustively, on one and two copy streams. Each inbox's flags
    must go back to 0 before its credit: launch e + 2 raises them to launch e's parity token, so a flag
    left holding it passes launch e + 2's wait before its data lands, and the owner adds launch e's band."""
    from tile_comm.protocol_peer import check_reduce_scatter, reduce_scatter_protocol

    for launches, bands, streams in ((4, 2, 1), (4, 1, 2)):
        report = check_reduce_scatter(launches, bands, streams=streams, buffers=2)
        assert report.ok and report.exhaustive, str(report)
    protocol = reduce_scatter_protocol(1, 1, buffers=2)
    assert protocol.name == "tp_reduce_scatter_double"
    names = {c.name for c in protocol.counters}
    assert {"credit0_in0", "credit0_in1", "flag1_in0_0", "flag1_in1_0"} <= names and "credit0" not in names
    found = check_reduce_scatter(3, 1, "no_clear", buffers=2, max_findings=1)
    assert [f.kind.name for f in found.findings] == ["AGENT_ERROR"], str(found)
    assert "launch 4 on rank" in found.findings[0].message
    assert "still hold launch 2's token, the same as launch 4's" in found.findings[0].message
    assert check_reduce_scatter(2, 1, "flag_before_data", buffers=2, max_findings=1).findings
    with pytest.raises(ValueError, match="bug = 'no_clear' needs buffers = 2"):
        reduce_scatter_protocol(3, 1, "no_clear")
    with pytest.raises(ValueError, match="buffers = 3 is invalid: allowed 1 or 2"):
        reduce_scatter_protocol(buffers=3)


def test_a_double_buffered_inbox_is_cut_in_two_and_needs_the_copy_engine():
    """PeerBuffers lays the two inboxes one after the other (data and words alike); the reduce-scatter
    refuses other counts, engine 'sm', and buffers unlike the count asked for, before touching a GPU."""
    import numpy as np
    from tile_comm.peer import PeerBuffers, TensorParallelGemmRS

    data, words = np.arange(8 * 2).reshape(8, 2), np.arange(10)
    boxes = PeerBuffers(data, words, {1: (data + 100, words + 100)}, "test", buffers=2)
    second, second_words = boxes.inbox(1)
    assert second.tolist() == data[4:].tolist() and second_words.tolist() == list(range(5, 10))
    peer, peer_words = boxes.outbox(1, 0)
    assert peer.tolist() == (data[:4] + 100).tolist() and peer_words.tolist() == list(range(100, 105))
    with pytest.raises(ValueError, match="inbox buffer 2 of 2: allowed 0..1"):
        boxes.inbox(2)
    with pytest.raises(ValueError, match="inbox_buffers = 3 is invalid: allowed 1 or 2"):
        TensorParallelGemmRS(None, None, 0, inbox_buffers=3)
    with pytest.raises(ValueError, match="inbox_buffers = 2 needs engine 'copy'"):
        TensorParallelGemmRS(None, None, 0, engine="sm", reduce="pass", inbox_buffers=2)
    with pytest.raises(ValueError, match="inbox_buffers = 1, but the buffers given hold 2"):
        TensorParallelGemmRS(None, None, 0, buffers=boxes, inbox_buffers=1)


def test_the_example_refuses_cleanly_without_two_gpus(capsys):
    """On a CPU-only machine (no torch, or no GPUs) the example says why in one line, exit 2; so does a
    world of fewer than two ranks."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("two GPUs here: the example runs instead")
    import tp_gemm_rs

    assert tp_gemm_rs.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the reduce-scatter over 2 GPUs needs") and err.count("\n") == 1
    assert tp_gemm_rs.main(["--world", "4"]) == 2
    assert "over 4 GPUs needs torch and 4 GPUs" in capsys.readouterr().err
    assert tp_gemm_rs.main(["--world", "1"]) == 2
    assert capsys.readouterr().err == "error: --world 1: allowed at least 2\n"
    assert tp_gemm_rs.main(["--copy-spread", "steps,peers"]) == 2
    assert capsys.readouterr().err == "error: --copy-spread peers: allowed steps or targets (a comma list)\n"
    assert tp_gemm_rs.main(["--inbox-buffers", "1,3"]) == 2
    assert capsys.readouterr().err == "error: --inbox-buffers 3: allowed 1 or 2 (a comma list)\n"


def test_a_copy_engine_config_whose_steps_are_not_whole_rows_is_refused():
    """The copy engine numbers steps over the shipped rows, the kernel over all of C: they agree only for
    bands of whole rows, so a user's configuration that walks otherwise is refused with the rule."""
    from tile_comm.peer import PEER_GEMM, check_copy_engine_config, copy_engine_config

    check_copy_engine_config(copy_engine_config(8192), 8192)
    with pytest.raises(ValueError, match=r"raster 'n', group 8 is invalid .* allowed raster 'm' with group ≥ 32"):
        check_copy_engine_config(PEER_GEMM, 8192)
    with pytest.raises(ValueError, match="group ≥ 32"):
        check_copy_engine_config(copy_engine_config(8192).with_(group=8), 8192)


def test_a_stream_per_receiver_deals_each_targets_steps_over_its_own_streams():
    """``spread="targets"``: with 3 receivers and 6 streams, target t's steps alternate over streams t and
    t + 3 (copies to different GPUs run at once); with 2 streams for 3 targets each target keeps one stream;
    ``steps`` is plain round-robin in walk order."""
    from pipes.comm import Step, streams_of_steps

    steps = [Step(i, (i,), 0, 0, 1, 1, target=i // 4) for i in range(12)]  # 3 targets × 4 steps
    assert streams_of_steps(steps, 2) == [0, 1] * 6
    assert streams_of_steps(steps, 6, "targets") == [0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5]
    assert streams_of_steps(steps, 3, "targets") == [0] * 4 + [1] * 4 + [2] * 4
    assert streams_of_steps(steps, 2, "targets") == [0] * 4 + [1] * 4 + [0] * 4
    with pytest.raises(ValueError, match="spread = 'peers' is invalid"):
        streams_of_steps(steps, 2, "peers")


def test_each_receivers_credit_is_taken_right_before_its_first_step():
    """``credit_takes``: the stream of a receiver's first step takes its credit just before it; every other
    stream carrying that receiver's steps waits for the take before its own first one; a receiver of a later
    block is not waited for by the first block's copies."""
    from pipes.comm import CreditTake, Step, credit_takes, streams_of_steps

    steps = [Step(i, (i,), 0, 0, 1, 1, target=i // 4) for i in range(12)]  # 3 targets × 4 steps
    targets = [s.target for s in steps]
    assert credit_takes(targets, streams_of_steps(steps, 2)) == [
        CreditTake(0, 0, 0, {1: 1}),
        CreditTake(1, 0, 4, {1: 5}),
        CreditTake(2, 0, 8, {1: 9}),
    ]
    assert credit_takes(targets, streams_of_steps(steps, 3, "targets")) == [
        CreditTake(t, t, 4 * t, {}) for t in range(3)
    ]
    assert credit_takes(targets, [0] * 12) == [CreditTake(t, 0, 4 * t, {}) for t in range(3)]
    assert credit_takes([], []) == []


def test_the_report_prints_the_table_and_rank_0s_timeline(capsys, monkeypatch):
    """``tp_gemm_rs.report``: the device and world, one row per shape (E and S from the timed contenders),
    and with ``--timeline`` when rank 0's kernel ended, took its credits and raised each step's flag."""
    import tp_gemm_rs

    monkeypatch.delenv("OUT", raising=False)
    us = {"matmul": 130.0, "reduce_scatter": 375.0, "sequential": 494.0, "our_gemm": 118.0, "ours": 490.0}
    row = {"shape": [8192, 8192, 2048], "device": "GPU", "world": 4, "buffers": "torch symmetric memory"}
    row |= {"rel_err": 3.8e-3, "bitwise_repeat": True, "us": us, **tp_gemm_rs.derived(us)}
    row["timeline"] = {"kernel_end": 120.4, "credits_taken": 3.2, "steps": [40.0, 75.5, 110.0], "started": [9, 41, 76]}
    row["timeline"]["ranks"] = [{"kernel_end": 120.4, "last_flag": 110.0, "period": 125.2}] * 2
    row["timeline"]["ranks"] += [{"kernel_end": 161.0, "last_flag": 99.6, "period": 170.5}]
    tp_gemm_rs.report([row])
    out = capsys.readouterr().out
    assert out.startswith("device: GPU × 4;")
    assert " 1.01 " in out  # S = 494 / 490
    assert "mean S 1.01 over 1 shapes (lowest 1.01)" in out  # no torch_fused timed: no count against it
    assert "timeline 8192×8192×2048, rank 0, µs from the launch's start: kernel ended 120, credits taken 3, " in out
    timeline, every = out.rstrip().splitlines()[-2:]
    assert timeline.endswith("steps (copy may begin→flag) 9→40 41→76 76→110")
    assert every.endswith("launch period (µs): 0: 120/110/125, 1: 120/110/125, 2: 161/100/170")


def test_the_summary_line_gives_the_mean_and_lowest_s_and_the_shapes_faster_than_torch():
    from ranks import speedup_summary

    line = speedup_summary([1.01, 1.15, 1.37, 1.07], [1.55, 1.76, 0.98, None])
    assert line == "mean S 1.15 over 4 shapes (lowest 1.01); faster than torch's fused op on 2 of 3"
    assert speedup_summary([], []) is None


def test_growing_copies_join_consecutive_steps_of_one_receiver_into_one_copy():
    """``copy_groups``: copy g takes up to ``sizes[min(g, last)]`` steps in walk order, a step joining only
    where it goes to the same receiver and continues the copy's rows in both buffers as whole rows; the
    copies take the streams in turn, and each receiver's credit is still taken before its first step."""
    from pipes.comm import Step, copy_groups, credit_takes, streams_of_copies

    size = 8 << 20  # 8 MiB steps of whole 16 KiB rows: 3 receivers × 4 steps, each continuing the last
    steps = [Step(i, (i,), i * size, (i % 4) * size, 1 << 14, size >> 14, target=i // 4) for i in range(12)]
    linear = [True] * 12
    assert copy_groups(steps, (1,), linear) == [(i,) for i in range(12)]
    growing = copy_groups(steps, (1, 2, 4), linear)
    assert growing == [(0,), (1, 2), (3,), (4, 5, 6, 7), (8, 9, 10, 11)]  # a receiver's block ends a copy
    stream_of = streams_of_copies(growing, 2)
    assert stream_of == [0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0]
    takes = credit_takes([s.target for s in steps], stream_of)
    assert [(t.target, t.stream, t.step) for t in takes] == [(0, 0, 0), (1, 1, 4), (2, 0, 8)]
    two_d = [True] * 5 + [False] + [True] * 6  # step 5 is not whole rows: a copy of its own
    assert copy_groups(steps, (4,), two_d) == [(0, 1, 2, 3), (4,), (5,), (6, 7), (8, 9, 10, 11)]
    gap = [*steps[:2], Step(2, (2,), 3 * size, 2 * size, 1 << 14, size >> 14)]  # its rows do not follow
    assert copy_groups(gap, (4,), [True] * 3) == [(0, 1), (2,)]
    for bad in ((), (0,), (1, True)):
        with pytest.raises(ValueError, match=r"copy sizes = .* are invalid: allowed a non-empty sequence of ints >= 1"):
            copy_groups(steps, bad, linear)


def test_copy_sizes_are_a_copy_engine_choice_checked_by_name(capsys):
    """``CommConfig.copy_sizes`` and ``tp_gemm_rs.py --copy-sizes``: steps per copy, for the copy engine's
    steps dealt in turn only; the command line's schedules are separated by ``/``."""
    import tp_gemm_rs
    from tile_comm.config import CommConfig, Engine, Transport

    grouped = CommConfig(Transport.PEER, ship_blocks=4, engine=Engine.COPY, copy_sizes=(1, 2, 4))
    assert grouped.describe().endswith("steps per copy 1,2,4")
    with pytest.raises(ValueError, match=r"copy_sizes = \(0,\) is invalid: allowed a non-empty tuple of ints"):
        CommConfig(Transport.PEER, ship_blocks=4, engine=Engine.COPY, copy_sizes=(0,))
    with pytest.raises(
        ValueError, match=r"copy_sizes = \(2,\) is invalid with engine 'copy' and copy_spread 'targets'"
    ):
        CommConfig(Transport.PEER, ship_blocks=4, engine=Engine.COPY, copy_sizes=(2,), copy_spread="targets")
    with pytest.raises(ValueError, match=r"copy_sizes = \(2,\) is invalid with engine 'sm'"):
        CommConfig(Transport.PEER, ship_blocks=2, copy_sizes=(2,))
    assert tp_gemm_rs.copy_sizes("1/1,2,4") == [(1,), (1, 2, 4)]
    assert tp_gemm_rs.main(["--copy-sizes", "1/0"]) == 2
    assert capsys.readouterr().err == "error: --copy-sizes 1/0: allowed ints >= 1 (1,2,4), schedules separated by /\n"
    assert tp_gemm_rs.main(["--copy-sizes", "1,2", "--copy-spread", "steps,targets"]) == 2
    assert "allowed only with --copy-spread steps" in capsys.readouterr().err


def test_the_multi_gpu_benches_hold_each_batch_and_refuse_bad_timing_arguments():
    """``ranks.Rounds``: every multi-GPU example takes ``--rounds`` and ``--queue-ahead-us`` (default: the
    batch held 1000 µs while the host queues it; the MLP block's 4000), and refuses a bad value by name
    before any rank starts."""
    import argparse

    from ranks import QUEUE_AHEAD_US, Rounds

    parser = argparse.ArgumentParser()
    Rounds.add_arguments(parser)
    assert Rounds.of(parser.parse_args([])) == Rounds(5, QUEUE_AHEAD_US) == Rounds()
    assert Rounds.of(parser.parse_args(["--rounds", "9", "--queue-ahead-us", "0"])) == Rounds(9, 0.0)
    for bad in (["--rounds", "0"], ["--queue-ahead-us", "-5"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    with pytest.raises(ValueError, match=r"rounds = 0 is invalid: allowed an int >= 1"):
        Rounds(0)
    import tp_ag_gemm
    import tp_gemm_rs
    import tp_mlp

    assert tp_ag_gemm.parse([]).queue_ahead_us == tp_gemm_rs.parse([]).queue_ahead_us == QUEUE_AHEAD_US
    assert tp_mlp.parse([]).queue_ahead_us == 4000


def test_both_directions_copy_on_one_stream_unless_told():
    """The reduce-scatter's steps and the all-gather's pushes go over one copy stream by default (on four
    GPUs a second copy in flight per GPU lowered the link's rate): the library's defaults and the examples'
    command lines agree, and a list still times other counts beside ours."""
    import inspect

    import tp_ag_gemm
    import tp_gemm_rs
    from gated_gemm import GatedGemm
    from tile_comm.config import PEER_COPY_STREAMS
    from tile_comm.peer import TensorParallelGemmRS

    from pipes.comm import ChunkPusher
    from pipes.comm.chunk_pusher import PUSH_STREAMS

    assert PEER_COPY_STREAMS == PUSH_STREAMS == 1
    assert inspect.signature(ChunkPusher).parameters["streams"].default == PUSH_STREAMS
    assert inspect.signature(GatedGemm).parameters["streams"].default == PUSH_STREAMS
    assert inspect.signature(TensorParallelGemmRS).parameters["copy_streams"].default == PEER_COPY_STREAMS
    assert tp_ag_gemm.parse([]).copy_streams == 1
    assert tp_gemm_rs.parse([]).copy_streams == "1"
    assert tp_gemm_rs.parse(["--copy-streams", "1,2"]).copy_streams == "1,2"


@pytest.mark.parametrize("world", [2, 3, 4, 5])
def test_reading_from_the_rotated_start_walks_the_blocks_in_block_order(world):
    """A GEMM whose load warp starts at ``rotated_rows_start`` and wraps reads the row blocks in
    ``block_order``: the same rows as ``rotate_rows``' copy (``TensorParallelGemmRS(rotated_reads=True)``)."""
    from tile_comm.peer import block_order, rotated_rows_start

    rows = 1024
    for rank in range(world):
        start = rotated_rows_start(rank, world, world * rows)
        assert start % rows == 0
        read = [(start // rows + p) % world for p in range(world)]
        assert read == block_order(rank, world)
