"""examples/epilogue_comm.py on the CPU: every variant compiles for sm_90a, the PTX orders what it must,
the GEMM without comm carries none of it, the pipeline protocol passes pipes.check (and planted defects
do not), and the host-side pieces (receiver, consumer, timeline, figures) behave.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

from hopper_gemm.config import GemmConfig, Problem, Schedule  # noqa: E402
from ptx_check import kernel_body, path_states, unordered_flag_releases  # noqa: E402
from tile_comm.config import CommConfig, Transport  # noqa: E402

COOP_256x128 = GemmConfig(256, 128, 1, 2, Schedule.COOPERATIVE)
COOP_128x256 = GemmConfig(128, 256, 2, 1, Schedule.COOPERATIVE)
COOP_128x128 = GemmConfig(128, 128, 2, 1, Schedule.COOPERATIVE)  # benchmarks/comm_overlap.py's finer tiles
PINGPONG = GemmConfig(128, 128, 2, 1, Schedule.PINGPONG)


@pytest.fixture(scope="module")
def fused():
    """Resources (PTX, registers, spills) of the fused kernel per (transport, config, dtype), compiled once."""
    from tile_comm.build import fused_resources

    cache = {}

    def get(transport: str, config: GemmConfig = COOP_256x128, dtype: str = "bf16", engine: str = "sm"):
        key = (transport, config, dtype, engine)
        if key not in cache:
            cache[key] = fused_resources(config, Problem(dtype), CommConfig(transport, engine=engine))
        return cache[key]

    return get


# --- the PTX ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "transport,config,dtype",
    [
        ("host", COOP_256x128, "bf16"),
        ("local", COOP_256x128, "bf16"),
        ("none", COOP_256x128, "bf16"),
        ("host", COOP_128x256, "fp16"),
        ("host", COOP_128x128, "bf16"),
    ],
)
def test_every_variant_compiles_without_spills(fused, transport, config, dtype):
    r = fused(transport, config, dtype)
    assert r.spill_bytes == 0, r.line()
    assert not r.wgmma_serialized  # ptxas C7510 (e.g. a printf anywhere in the kernel) slows every mainloop
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40", r.ptx)  # the comm warp lives under 40 registers
    # The storing warp: lag 0 waits for the tile's own groups without .read, then notifies.
    assert re.search(r"cp\.async\.bulk\.wait_group\s+0;", r.ptx)
    assert r.smem_bytes <= 232_448


@pytest.mark.parametrize("transport", ["host", "local"])
def test_the_comm_warp_fits_in_40_registers(fused, transport):
    """ptxas keeps the producer warpgroup's code (load and comm warps) under its setmaxnreg 40."""
    pytest.importorskip("nvidia.cu13", reason="nvdisasm comes with the nvidia-cuda-nvdisasm wheel (dev extra)")
    import subprocess
    import tempfile

    from kernel_tools.report import nvdisasm_path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "k.cubin")
        path.write_bytes(fused(transport).cubin)
        sass = subprocess.run([nvdisasm_path(), "-c", str(path)], check=True, capture_output=True, text=True).stdout
    lines = sass.splitlines()
    start = next(i for i, line in enumerate(lines) if "USETMAXREG.DEALLOC" in line)
    end = next(i for i, line in enumerate(lines) if "USETMAXREG.TRY_ALLOC" in line)
    region = " ".join(line.split(";")[0] for line in lines[start:end])
    assert "STG.E.128" in region and "STG.E.STRONG" in region  # the copy and the flag are in this region
    used = {int(r) for r in re.findall(r"\bR(\d+)\b", region)}
    assert max(used) < 40, f"register R{max(used)} in the 40-register region"


def test_host_and_local_publish_at_their_scope(fused):
    host, local, none = fused("host").ptx, fused("local").ptx, fused("none").ptx
    assert "st.release.sys.global.b32" in host and "fence.acq_rel.sys" in host
    assert "ld.acquire.sys.global.b32" in host  # the credit wait
    assert "st.release.gpu.global.b32" in local and "fence.acq_rel.gpu" in local
    assert ".sys" not in re.sub(r"//.*", "", local)  # nothing at system scope for a device receiver
    assert "ld.global.cg.v4.b32" in host and "st.global.v4.b32" in host  # 16-byte vectors, L2-only loads
    assert "st.release" not in none and "ld.global.cg.v4" not in none  # 'none' moves nothing


@pytest.mark.parametrize("config", [COOP_256x128, COOP_128x256], ids=["256x128c12", "128x256c21"])
def test_copy_engine_variant_counts_tiles_and_copies_nothing(fused, config):
    """Engine copy: the comm warp releases one count per tile at system scope and moves no tile bytes."""
    r = fused("host", config, "bf16", "copy")
    assert r.spill_bytes == 0, r.line()
    assert not r.wgmma_serialized
    assert re.search(r"red\.release\.sys\.global\.add\.u32", r.ptx)  # a reduction: no value comes back
    assert "ld.global.cg.v4" not in r.ptx and "st.global.v4" not in r.ptx  # no SM copy of any tile
    assert "st.release.sys.global.b32" in r.ptx  # the per-CTA start/end flags the host watches
    assert re.search(r"cp\.async\.bulk\.wait_group\s+0;", r.ptx)  # counted only once the stores are complete


def test_copy_engine_plan_covers_c_exactly_once():
    """plan_steps' byte rectangles, applied to a C with a padded row stride, rebuild C in the receive buffer
    (rows past C's edge untouched), each element written once; every tile is in one step."""
    from pipes.comm import plan_steps
    from pipes.tile_order import TileOrder

    for order, (m, n), tile in [
        (TileOrder(1, 2, "m", 8), (1000, 1320), (256, 128)),
        (TileOrder(2, 1, "m", 3), (520, 640), (128, 256)),
        (TileOrder(2, 1, "n", 2), (777, 392), (128, 128)),
    ]:
        ldc, elem = n + 24, 2
        tiles_m, tiles_n = -(-m // tile[0]), -(-n // tile[1])
        c = np.arange(m * ldc, dtype=np.int64).reshape(m, ldc) % 65521 + 1
        src = c.astype(np.uint16).view(np.uint8).reshape(-1)
        dst = np.zeros((tiles_m * tile[0], tiles_n * tile[1] * elem), np.uint8)
        writes = np.zeros(dst.shape, np.int32)
        steps = plan_steps(order, m, n, tile, elem, ldc)
        for step in steps:
            for r in range(step.rows):
                s0 = step.src_offset + r * ldc * elem
                d_row, d_col = divmod(step.dst_offset + r * dst.shape[1], dst.shape[1])
                dst[d_row, d_col : d_col + step.width_bytes] = src[s0 : s0 + step.width_bytes]
                writes[d_row, d_col : d_col + step.width_bytes] += 1
        got = dst.view(np.uint16)[:m, :n]
        assert (got == c[:, :n].astype(np.uint16)).all()
        assert (writes[:m, : n * elem] == 1).all() and (writes[m:] == 0).all() and (writes[:, n * elem :] == 0).all()
        assert sorted(t for s in steps for t in s.tiles) == list(range(tiles_m * tiles_n))


@pytest.mark.parametrize("transport", ["host", "local"])
def test_every_flag_release_follows_a_fence_and_a_warp_sync_on_every_path(fused, transport):
    ptx = fused(transport).ptx
    assert ptx.count("st.release.") >= 3  # CTA start, each tile, CTA end
    assert unordered_flag_releases(ptx) == []
    # Negative control: without the fences, the same analysis finds the releases unordered.
    broken = re.sub(r"\tfence\.acq_rel\.\w+;\n", "", ptx)
    assert unordered_flag_releases(broken)


def test_tile_reads_only_after_a_barrier_wait(fused):
    def transfer(ins: str, state: str) -> str:
        return "waited" if "mbarrier.try_wait" in ins else state

    reads = [
        s for i, s in path_states(kernel_body(fused("host").ptx), transfer, "none") if i.startswith("ld.global.cg")
    ]
    assert reads and all(s == {"waited"} for s in reads)


def test_gemm_without_comm_has_no_comm_code():
    """comm=None is the GEMM alone (byte-identical PTX was checked when the hook went in, commit 7e6f38e)."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream
    from hopper_gemm.kernel import GemmKernel
    from hopper_gemm.launch import fake_operands
    from hopper_gemm.roles import declare

    problem = Problem("bf16")
    plain = GemmKernel(COOP_256x128, problem)
    assert plain.comm is None and plain.decl.notify is None and plain.decl.pipelines == (plain.decl.mainloop,)
    assert set(declare(COOP_256x128, problem).layout.roles) == {"load", "mma"}
    args = (*fake_operands(problem), cutlass.Float32(1.0), cutlass.Int32(1), make_fake_stream())
    ptx = cute.compile(plain, *args, options="--gpu-arch sm_90a --keep-ptx").artifacts.PTX
    for comm_only in ("st.release", "fence.acq_rel", "ld.global.cg.v4", "%globaltimer", "nanosleep"):
        assert comm_only not in ptx, comm_only
    assert not re.search(r"cp\.async\.bulk\.wait_group\s+\d", ptx)  # only .read waits (the staging ring)
    inits = len(re.findall(r"mbarrier\.init", ptx))
    assert inits in (1, 2 * COOP_256x128.stages(problem)[0])  # the mainloop ring's barriers (a loop or unrolled)


def test_comm_only_kernels_compile():
    from tile_comm.build import alone_resources

    for transport in ("host", "local"):
        r = alone_resources(COOP_256x128, CommConfig(transport), "bf16")
        assert r.spill_bytes == 0 and f"st.release.{CommConfig(transport).scope}" in r.ptx


# --- errors before anything compiles ------------------------------------------------------------------
def test_configuration_errors_are_clear():
    from gemm_modes.launch import hooks_for
    from gemm_modes.modes import tuned_config
    from hopper_gemm.comm_hook import check_comm
    from hopper_gemm.kernel import GemmKernel
    from tile_comm.role import CommRole

    from pipes.tile_order import TileOrder

    role = CommRole(CommConfig("host"), COOP_256x128)
    with pytest.raises(ValueError, match="cooperative schedule"):
        GemmKernel(PINGPONG, Problem("bf16"), comm=role)
    with pytest.raises(TypeError, match="must be a pipes.cute.comm.CommHook"):
        GemmKernel(COOP_256x128, Problem("bf16"), comm=object())
    with pytest.raises(ValueError, match="tile_n = 192"):
        CommRole(CommConfig("host"), GemmConfig(128, 192, 1, 1, Schedule.COOPERATIVE))
    with pytest.raises(ValueError, match="pdl must be False with a comm role"):
        GemmKernel(COOP_256x128.with_(pdl=True), Problem("bf16"), comm=role)
    ring = hooks_for(tuned_config(128, 128, 2, 1, Schedule.PINGPONG, staging_in_ring=True))
    with pytest.raises(ValueError, match="runs on the plain kernel, without performance modes"):
        GemmKernel(COOP_256x128, Problem("bf16"), comm=role, modes=ring)
    with pytest.raises(ValueError, match="allowed \\['host', 'local', 'none', 'peer'\\]"):
        CommConfig("carrier-pigeon")
    assert CommConfig("peer").scope == "sys"
    with pytest.raises(ValueError, match="lag"):
        CommConfig("host", slots=2, lag=2)
    with pytest.raises(ValueError, match="unroll"):
        CommConfig("host", unroll=0)
    assert CommConfig("host").scope == "sys" and CommConfig("local").scope == "gpu" and CommConfig("none").scope is None
    with pytest.raises(ValueError, match="engine = 'copy' is invalid with transport 'none'"):
        CommConfig("none", engine="copy")
    # The copy engine is no thread of the GPU: its counts and flags are system-scope even for 'local'.
    assert CommConfig("local", engine="copy").scope == "sys" and CommConfig("local").scope == "gpu"
    with pytest.raises(ValueError, match="ship_blocks must be 1 with engine 'copy' and transport 'local'"):
        CommConfig("local", engine="copy", ship_blocks=2)
    with pytest.raises(ValueError, match="engine = 'dma'"):
        CommConfig("host", engine="dma")
    with pytest.raises(ValueError, match="copy_spread = 'peers' is invalid: allowed 'steps' or 'targets'"):
        CommConfig("peer", engine="copy", ship_blocks=4, copy_spread="peers")
    assert "a stream per receiver" in CommConfig("peer", engine="copy", ship_blocks=4, copy_spread="targets").describe()
    with pytest.raises(ValueError, match="ship_blocks must be 1"):
        CommConfig("host", engine="copy", ship_blocks=2)
    with pytest.raises(ValueError, match="split tiles .* are not stored once, whole"):
        check_comm(COOP_256x128, hooks_for(tuned_config(256, 128, 1, 2, Schedule.COOPERATIVE, stream_k=True)))
    with pytest.raises(ValueError, match="needs epi_batch = 1, not 4"):
        check_comm(COOP_256x128.with_(epi_batch=4))
    # The copy engine's steps are the GEMM's own walk: the role takes its order from the GEMM it serves.
    role = CommRole(CommConfig("host", engine="copy", step_rows=2), COOP_256x128.with_(group=4))
    assert role.order == TileOrder(1, 2, "m", 4, step_depth=2) == role.shipper.spec.order
    assert CommConfig.default("host").engine.value == "copy" and CommConfig.default("local").engine.value == "sm"
    assert CommConfig.default("local").unroll == 2 and CommConfig.default("host").unroll == 4  # measured (config.py)
    assert CommConfig.default("host").step_rows == 2 and CommConfig.default("local").step_rows == 1
    assert CommConfig.default("host", "sm") == CommConfig("host", pace_ns=4000)  # the other engine's defaults
    assert CommConfig.default("local", "copy") == CommConfig("local", engine="copy")


def test_default_config_is_the_tables_unsplit_cooperative_choice():
    """The fused kernel never splits tiles: where the table picks stream-K, split-K or ping-pong it takes the
    table's unsplit cooperative configuration, whatever the table's split mode (a bare ``stream_k=False``
    on a remainder-mode pick would be an invalid configuration)."""
    from gemm_modes.autotable import pick
    from tile_comm.launcher import COOPERATIVE_FALLBACK, default_config

    shapes = ((8192, 8192, 16384), (6144, 6144, 6144), (8192, 8192, 1024), (256, 8192, 8192), (4096, 4096, 4096))
    for mnk in (*shapes, (1024, 1024, 8192)):
        config = default_config(*mnk, comm=CommConfig("local"))
        assert isinstance(config, GemmConfig) and config.schedule is Schedule.COOPERATIVE, mnk  # no modes
        table = pick(Problem("bf16"), mnk)
        unsplit = table.schedule is Schedule.COOPERATIVE and not table.partial_sums
        expected = table.config if unsplit else COOPERATIVE_FALLBACK
        # The fused protocol is checked unbatched, and its comm role counts the storing warp's bulk groups.
        assert config == expected.with_(epi_batch=1, ab_stages=None), mnk
    assert pick(Problem("bf16"), (8192, 8192, 16384)).stream_k_remainder  # the cases this guards
    assert pick(Problem("bf16"), (1024, 1024, 8192)).split_k > 1
    # where the table swaps (Cᵀ = B·Aᵀ, warpgroups along N) the comm kernel keeps C's rows and whole warpgroups
    assert pick(Problem("bf16"), (4104, 4104, 4104)).swap_ab
    unswapped = pick(Problem("bf16"), (4104, 4104, 4104), swap=False)  # the aligned split: the fallback
    assert unswapped.stream_k_aligned
    swapped_shape = default_config(4104, 4104, 4104, comm=CommConfig("local"))
    assert swapped_shape == COOPERATIVE_FALLBACK.with_(epi_batch=1, ab_stages=None)
    wide = default_config(8192, 8192, 16384, comm=CommConfig.default("host"))
    assert (wide.tile_m, wide.tile_n, wide.group) == (256, 128, 32)  # full-width band


def test_receiver_rejects_pageable_and_misshapen_buffers():
    torch = pytest.importorskip("torch")
    from tile_comm.receiver import Receiver

    with pytest.raises(ValueError, match="pin_memory=True"):
        Receiver.create(
            Transport.HOST,
            300,
            256,
            (128, 256),
            torch.bfloat16,
            "cpu",
            data=torch.zeros(3, 128, 256, dtype=torch.bfloat16),
        )
    with pytest.raises(ValueError, match=r"\(tiles, tile_m, tile_n\)"):
        Receiver.create(
            Transport.HOST,
            300,
            256,
            (128, 256),
            torch.bfloat16,
            "cpu",
            data=torch.zeros(2, 128, 256, dtype=torch.bfloat16),
        )


def test_epochs_wrap_never_to_zero_and_keep_alternating_parity():
    from tile_comm.receiver import Receiver

    from pipes.epoch import as_int32, parity_token

    rx = Receiver(Transport.LOCAL, 1, 1, 128, 256, None, None, None, None, epoch=0xFFFFFFFE)
    epochs = [rx.next_epoch() for _ in range(4)]
    # Past 0xFFFFFFFF the next epoch is 2, not 1: consecutive epochs keep alternating parity, so the
    # copy engine's two-GPU tokens alternate across the wrap too.
    assert epochs == [0xFFFFFFFF, 2, 3, 4]
    tokens = [parity_token(e) for e in [0xFFFFFFFE, *epochs]]
    assert all(a != b for a, b in zip(tokens, tokens[1:], strict=False)) and set(tokens) == {1, 2}
    assert as_int32(0xFFFFFFFF) == -1 and as_int32(5) == 5


# --- the protocol through pipes.check --------------------------------------------------------------------
@pytest.mark.parametrize("slots,lag", [(1, 0), (2, 0), (2, 1), (3, 2)])
@pytest.mark.parametrize("transport", ["host", "local", "none"])
def test_the_kernels_declarations_pass_the_checker(transport, slots, lag):
    from hopper_gemm.roles import declare
    from tile_comm.protocol import check_declarations
    from tile_comm.role import CommRole

    comm = CommConfig(transport, slots=slots, lag=lag)
    decl = declare(COOP_256x128, Problem("bf16"), comm=CommRole(comm, COOP_256x128))
    report = check_declarations(decl, comm.scope)
    assert report.ok and report.exhaustive, str(report)


@pytest.mark.parametrize("slots,lag", [(1, 0), (2, 0), (3, 2)])
def test_the_copy_engine_protocol_passes_the_checker(slots, lag):
    """Engine copy: the comm warp's counts, the copy stream's wait-copy-flag per step, the host's reads."""
    from hopper_gemm.roles import declare
    from tile_comm.protocol import check_declarations
    from tile_comm.role import CommRole

    comm = CommConfig("host", slots=slots, lag=lag, engine="copy")
    decl = declare(COOP_256x128, Problem("bf16"), comm=CommRole(comm, COOP_256x128))
    report = check_declarations(decl, "sys", engine="copy")
    assert report.ok and report.exhaustive, str(report)


@pytest.mark.parametrize("bug", ["flag_before_data", "notify_on_read", "no_proxy_fence", "narrow_scope"])
def test_planted_copy_engine_defects_are_found(bug):
    from hopper_gemm.roles import declare
    from tile_comm.protocol import check_declarations
    from tile_comm.role import CommRole

    from pipes.check import FindingKind

    comm = CommConfig("host", engine="copy")
    decl = declare(COOP_256x128, Problem("bf16"), comm=CommRole(comm, COOP_256x128))
    report = check_declarations(decl, "sys", engine="copy", bug=bug)
    assert not report.ok
    assert report.findings[0].kind is FindingKind.READ_UNCOMMITTED, str(report)


@pytest.mark.parametrize("bug", ["flag_before_data", "notify_on_read", "no_proxy_fence", "narrow_scope"])
def test_planted_defects_are_found(bug):
    from hopper_gemm.roles import declare
    from tile_comm.protocol import check_declarations
    from tile_comm.role import CommRole

    from pipes.check import FindingKind

    decl = declare(COOP_256x128, Problem("bf16"), comm=CommRole(CommConfig("host"), COOP_256x128))
    report = check_declarations(decl, "sys", bug=bug)
    assert not report.ok
    assert report.findings[0].kind is FindingKind.READ_UNCOMMITTED, str(report)


# --- host side ------------------------------------------------------------------------------------------
def _cpu_receiver(tiles_m=2, tiles_n=3, tile=(4, 8), layout="tiles"):
    torch = pytest.importorskip("torch")
    from tile_comm.receiver import MAX_CTAS, Receiver

    tiles = tiles_m * tiles_n
    shape = (tiles, *tile) if layout == "tiles" else (tiles_m * tile[0], tiles_n * tile[1])
    data = torch.zeros(shape, dtype=torch.bfloat16)
    words = torch.zeros(2 * tiles + 2 * MAX_CTAS, dtype=torch.int32)
    return Receiver(Transport.HOST, tiles_m, tiles_n, tile[0], tile[1], data, words, None, None, layout)


def _tile(rx, data, t):
    """Tile ``t`` of a numpy array in the receiver's layout (a writable view)."""
    if rx.layout == "tiles":
        return data[t]
    tm, tn = divmod(t, rx.tiles_n)
    return data[tm * rx.tile_m : (tm + 1) * rx.tile_m, tn * rx.tile_n : (tn + 1) * rx.tile_n]


def _fake_device(rx, epoch, ctas, flag_first=False, wait_credits=False):
    """A thread that writes tiles and flags the way the communication warp does (or flags first)."""
    import torch

    flags = rx.flags.numpy().view(np.uint32)
    cta_flags = rx.ctas.numpy().view(np.uint32)
    credits = rx.credits.numpy().view(np.uint32)
    data = rx.data.view(torch.int16).numpy().view(np.uint16)

    def run():
        cta_flags[0 : 2 * ctas : 2] = epoch
        for t in range(rx.tiles):
            if wait_credits:
                while int(credits[t]) < epoch - 1:
                    time.sleep(1e-4)
            if flag_first:
                flags[t] = epoch
                time.sleep(2e-3)
            _tile(rx, data, t)[...] = epoch * 100 + t
            flags[t] = epoch
            time.sleep(1e-4)
        cta_flags[1 : 2 * ctas : 2] = epoch

    return threading.Thread(target=run)


def _expected(rx, epoch):
    import torch

    want = torch.zeros_like(rx.data)
    for t in range(rx.tiles):
        _tile(rx, want.view(torch.int16).numpy(), t)[...] = epoch * 100 + t
    return rx.checksums(data=want)


def test_checksums_are_per_tile_in_both_layouts():
    torch = pytest.importorskip("torch")

    for layout in ("tiles", "rows"):
        rx = _cpu_receiver(layout=layout)
        data = rx.data.view(torch.int16).numpy()
        _tile(rx, data, 4)[0, 0] = 1  # one element of tile 4 (row 1, column 1)
        sums = rx.checksums()
        assert sums[4] == 1 and (np.delete(sums, 4) == 0).all(), (layout, sums)
        assert rx.checksums([4, 0]).tolist() == [1, 0]


@pytest.mark.parametrize("layout", ["tiles", "rows"])
def test_host_consumer_checksums_tiles_as_they_land(layout):
    from tile_comm.consumer import HostConsumer

    rx = _cpu_receiver(layout=layout)
    consumer = HostConsumer(rx, 1, ctas=2, timeout_s=10)
    consumer.start()
    consumer.started_polling.wait()
    device = _fake_device(rx, 1, ctas=2)
    device.start()
    device.join()
    consumer.join()
    assert consumer.verify() == [] and consumer.verify(_expected(rx, 1)) == []
    seen = consumer.result.seen_ns
    assert (seen >= 0).all() and consumer.result.start_ns >= 0 and consumer.result.end_ns >= seen.max()
    assert any("first tile consumed" in line for line in consumer.result.summary())


def test_host_consumer_reads_one_flag_per_step():
    """The copy engine raises one flag per step: every tile of the step is consumed when it appears, and a
    tile is checksummed only then (its data written before its step's flag)."""
    from tile_comm.consumer import HostConsumer

    rx = _cpu_receiver(tiles_m=2, tiles_n=3, layout="rows")
    rx.flag_index = np.array([0, 0, 0, 1, 1, 1])  # one step per tile row
    consumer = HostConsumer(rx, 7, ctas=1, timeout_s=10)
    consumer.start()
    consumer.started_polling.wait()
    import torch

    data = rx.data.view(torch.int16).numpy()
    flags, cta_flags = rx.flags.numpy(), rx.ctas.numpy()
    cta_flags[0] = 7
    for step in (0, 1):
        for t in np.flatnonzero(rx.flag_index == step):
            _tile(rx, data, t)[...] = 700 + t
        time.sleep(2e-3)
        flags[step] = 7
        time.sleep(2e-3)
    cta_flags[1] = 7
    consumer.join()
    assert consumer.verify(_expected(rx, 7)) == []
    seen = consumer.result.seen_ns
    assert len(set(seen[:3])) == 1 and len(set(seen[3:])) == 1 and seen[3] > seen[0]
    assert rx.tile_flags().tolist() == [7] * 6


def test_copy_engine_flag_covers_its_steps_tiles():
    from pipes.comm import plan_steps, step_of_tiles
    from pipes.tile_order import TileOrder

    order = TileOrder(1, 2, "m", 3)
    index = step_of_tiles(order, 5, 9)
    for step in plan_steps(order, 5 * 256 - 7, 9 * 128, (256, 128), 2, 9 * 128):
        assert (index[list(step.tiles)] == step.index).all()
    assert sorted(set(index.tolist())) == list(range(order.steps(*order.cluster_grid(5, 9))))


def test_host_consumer_reports_a_flag_raised_before_the_data():
    from tile_comm.consumer import HostConsumer

    rx = _cpu_receiver()
    consumer = HostConsumer(rx, 1, ctas=1, timeout_s=10)
    consumer.start()
    consumer.started_polling.wait()
    device = _fake_device(rx, 1, ctas=1, flag_first=True)
    device.start()
    device.join()
    consumer.join()
    problems = consumer.verify(_expected(rx, 1))
    assert problems and "other contents" in problems[0]


def test_slow_host_consumer_with_credits_over_back_to_back_launches():
    from tile_comm.consumer import HostConsumer

    rx = _cpu_receiver()
    consumer = HostConsumer(rx, [1, 2, 3], ctas=1, delay_s=1e-3, credits=True, timeout_s=20)
    consumer.start()
    for epoch in (1, 2, 3):  # "launches" queued behind each other, each waiting for the credits
        device = _fake_device(rx, epoch, ctas=1, wait_credits=True)
        device.start()
        device.join()
    consumer.join()
    assert consumer.verify([_expected(rx, e) for e in (1, 2, 3)]) == []


def test_timeline_spans_and_picture(tmp_path):
    from tile_comm.args import CTA_STAMPS, MAX_TRACED_CTAS, TILE_STAMPS, stamp_words
    from tile_comm.timeline import draw, overlap_summary, spans

    tiles_m, tiles_n, ctas = 2, 2, 2
    stamps = np.zeros(stamp_words(tiles_m, tiles_n), np.int64)
    base = 1_000_000
    stamps[0 : 2 * ctas : 2] = base
    per_tile = stamps[MAX_TRACED_CTAS * CTA_STAMPS :].reshape(-1, TILE_STAMPS)
    for tile in range(4):  # CTA tile % 2; each CTA: MMA 100 µs, epilogue 5 µs, push 20 µs
        cta, k = tile % 2, tile // 2
        begin = base + (k + 1) * 100_000 + k * 5_000
        per_tile[tile] = (begin, begin + 5_000, begin + 6_000, begin + 26_000, cta, 7)
    host_ns = np.array([10_000_000 + 107_000, -1, -1, -1])
    found = spans(stamps, tiles_m * tiles_n, ctas, host_ns, host_start_ns=10_000_000)
    mma = [s for s in found if s.role == "MMA mainloop" and s.cta == 0]
    assert [round(s.start_us) for s in mma] == [0, 105] and [round(s.end_us) for s in mma] == [100, 205]
    host = [s for s in found if s.role == "host consumed"]
    assert len(host) == 1 and round(host[0].start_us) == 107
    assert overlap_summary(found)["push_before_gemm_end_us"] > 0
    draw(found, str(tmp_path / "t.png"), [0, 1], "synthetic")
    assert (tmp_path / "t.png").stat().st_size > 1000


def test_overlap_figures():
    from tile_comm.measure import Overlap, header, overlap_efficiency, row

    assert overlap_efficiency(700, 600, 700) == pytest.approx(1.0)
    assert overlap_efficiency(700, 600, 1300) == pytest.approx(0.0)
    us = dict(torch_matmul=695, copy=623, sequential=1318, gemm_plain=690, gemm_none=695, comm_alone=650, fused=788)
    o = Overlap("H100", (4096, 4096, 16384), "bf16", "host", "cfg", us)
    assert o.t_gemm == 690  # the faster of the GEMM alone and 'none'
    assert o.efficiency == pytest.approx((690 + 650 - 788) / 650)
    assert o.speedup == pytest.approx(1318 / 788) and o.regret == pytest.approx(788 / 695 - 1)
    assert len(row(o)) == len(header())


@pytest.mark.usefixtures("torch_without_gpu")
def test_without_a_gpu_the_example_reports_and_checks(capsys):
    """The README's main command on a machine without a GPU — or without torch, as a CPU-only install."""
    import epilogue_comm

    assert epilogue_comm.main(["--transport", "local"]) == 0
    out = capsys.readouterr().out
    assert "no CUDA GPU here: compiling for sm_90a instead" in out
    assert re.search(r"GEMM \+ comm warp \(local\)\s+registers\s+\d+/thread, spills 0 B", out)
    assert "pipes.check epilogue_comm: OK" in out and "exhaustive" in out
    assert "planted flag_before_data : READ_UNCOMMITTED" in out


def test_readme_main_command_is_this_example():
    text = (EXAMPLES.parent / "README.md").read_text()
    block = re.search(r"## Run the main example\n```bash\n(.*?)```", text, re.S)
    assert block and block.group(1).strip() == "python examples/epilogue_comm.py"
    assert "examples/ascend_gemm_pingpong.py" in text  # the second example


# --- the cached launch -------------------------------------------------------------------------------
def test_cached_launch_swaps_exactly_the_per_launch_arguments():
    """The fused kernel's argument list, converted once: the entries CachedLaunch rewrites per call are
    the stream, the epoch, delay_ns and options (it checks the values it was built with), and a call
    writes them where the packed argument array the host function receives points."""
    import ctypes

    torch = pytest.importorskip("torch")
    import cuda.bindings.driver as cu
    import cutlass
    from hopper_gemm.launch import cute_operands
    from tile_comm.args import Addresses, kernel_args
    from tile_comm.build import fused
    from tile_comm.cached_launch import CachedLaunch

    compiled = fused(COOP_256x128, Problem("bf16"), CommConfig("host", engine="copy"))
    a = torch.randn(512, 128, dtype=torch.bfloat16)
    b = torch.randn(256, 128, dtype=torch.bfloat16)
    c = torch.empty(512, 256, dtype=torch.bfloat16)
    operands = (*cute_operands(a, b, c, None), cutlass.Float32(1.0), cutlass.Int32(4))
    comm_args = kernel_args(Addresses(*(1 << 20,) * 6), "bf16", epoch=12345, delay_ns=77, options=2)
    cached = CachedLaunch.build(compiled, operands, cu.CUstream(0xABC0), comm_args)
    assert cached is not None  # this DSL's layout: the fast path is taken

    class Recorder:
        def capi_func(self, packed):
            self.packed = list(packed)

        cuda_result = None

    recorder = Recorder()
    cached.prepared._executor = recorder
    cached.prepared._result = None
    cached(0xDEF0, (1 << 32) - 3, 5, 1)  # an epoch past 2^31 travels as its int32 bits
    base = len(cached.prepared._args)  # the packed array: the address list, then the executor's extras

    def read(index, kind):
        return kind.from_address(recorder.packed[base + index]).value

    assert read(-12, ctypes.c_uint64) == 0xDEF0
    assert read(-5, ctypes.c_int32) == -3
    assert (read(-4, ctypes.c_int32), read(-3, ctypes.c_int32)) == (5, 1)

    # A double-buffered inbox: the inbox and its flags are cells too, swapped per launch.
    inboxed = CachedLaunch.build(compiled, operands, cu.CUstream(0xABC0), comm_args, inbox=(1 << 20, 1 << 20))
    assert inboxed is not None
    inboxed.prepared._executor = recorder
    inboxed.prepared._result = None
    inboxed(0xDEF0, 9, 0, 0, inbox=(0x7000_0000, 0x7100_0000))
    assert (read(-2, ctypes.c_uint64), read(-1, ctypes.c_uint64)) == (0x7000_0000, 0x7100_0000)
    assert read(-5, ctypes.c_int32) == 9

    class OtherLayout:
        def generate_execution_args(self, *args):
            return [ctypes.c_void_p(0)] * 20, None

        def to(self):
            return None

    assert CachedLaunch.build(OtherLayout(), operands, cu.CUstream(0xABC0), comm_args) is None


def test_the_gemm_takes_the_librarys_own_comm_role():
    """Any CommHook ships the GEMM's tiles: the library's TileShipper (engine sm, host scope) compiles into
    it with the library's own run-time arguments, no spills, its flags released at system scope."""
    import cutlass
    from cutlass.cute.runtime import make_fake_stream
    from hopper_gemm.comm_hook import adds_partials
    from hopper_gemm.kernel import GemmKernel
    from hopper_gemm.launch import fake_operands
    from kernel_tools.report import compile_with_remarks

    from pipes.comm import fake_ship_args
    from pipes.cute.comm import ShipSpec, TileShipper

    role = TileShipper(ShipSpec((COOP_256x128.tile_m, COOP_256x128.tile_n), engine="sm", scope="sys"))
    assert not adds_partials(role)
    kernel = GemmKernel(COOP_256x128, Problem("bf16"), comm=role)
    args = (*fake_operands(Problem("bf16")), cutlass.Float32(1.0), cutlass.Int32(1), make_fake_stream())
    compiled, remarks = compile_with_remarks(kernel, (*args, fake_ship_args(cutlass.BFloat16)))
    ptx = compiled.artifacts.PTX
    assert not re.search(r"[1-9]\d* bytes spill", remarks)
    assert "st.release.sys.global.b32" in ptx and "fence.acq_rel.sys" in ptx and "ld.global.cg.v4" in ptx
    assert unordered_flag_releases(ptx) == []
