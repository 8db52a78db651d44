"""CPU tests of the comm library: the epoch arithmetic, the device objects' PTX for every scope and form,
the host objects' checks, and the host consumer thread driven by a fake device.

Kernels are compiled for sm_90a without a GPU; every PTX fact is also checked on a variant that must not
have it (another scope, ``report=False``), so no assertion can pass vacuously.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32
from ptx_check import kernel_body, path_states

from pipes.comm import Epochs, TileConsumer, plan_steps, reached_all, step_of_tiles
from pipes.cute.comm import (
    SCOPES,
    Credits,
    ReadyFlags,
    ShipSpec,
    StepCounters,
    TileCopy,
    TileShipper,
    check_reaches,
    needed_scope,
)
from pipes.epoch import FIRST, FRESH, MASK, as_int32, next_epoch, parity_token, previous, reached
from pipes.tile_order import TileOrder

OPTIONS = "--gpu-arch sm_90a --keep-ptx"


# --- the epoch arithmetic -------------------------------------------------------------------------------------
def test_epochs_never_return_to_fresh_and_alternate_parity_across_the_wrap():
    seq = Epochs(MASK - 2)
    got = [seq.next() for _ in range(5)]
    assert got == [MASK - 1, MASK, FIRST, FIRST + 1, FIRST + 2]
    assert Epochs().next() == FIRST and next_epoch(FRESH) == FIRST
    tokens = [parity_token(e) for e in [MASK - 2, *got]]
    assert all(a != b for a, b in zip(tokens, tokens[1:], strict=False)) and set(tokens) == {1, 2}
    with pytest.raises(ValueError, match="allowed an int in \\[0, 0xFFFFFFFF\\]"):
        next_epoch(-1)


def test_reached_is_cyclic_and_previous_agrees_with_next_across_the_wrap():
    for epoch in (FIRST, FIRST + 1, 12345, MASK - 1, MASK):
        before = previous(epoch)
        assert next_epoch(before) == epoch or (epoch == FIRST and before == MASK)
        assert reached(epoch, epoch) and reached(epoch, before) and not reached(before, epoch)
    # A fresh flag has reached no epoch; a fresh credit has reached the one before the first launch.
    assert not reached(FRESH, FIRST) and reached(FRESH, previous(FIRST))
    # After the wrap, a credit of 0xFFFFFFFF admits launch 2 and a credit two launches old does not.
    assert reached(MASK, previous(FIRST)) and not reached(MASK - 1, previous(FIRST))
    words = np.array([as_int32(v) for v in (FRESH, MASK, FIRST, FIRST + 1)], dtype=np.int32)
    assert reached_all(words, FIRST).tolist() == [False, False, True, True]
    assert as_int32(MASK) == -1 and as_int32(5) == 5


# --- device objects: PTX --------------------------------------------------------------------------------------
def _gmem(dtype=Uint32):
    from cutlass.cute.runtime import make_ptr

    return make_ptr(dtype, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)


class _OneWarp:
    """A one-warp kernel running ``body(first, second)`` (the DSL needs a fixed signature)."""

    def __init__(self, body) -> None:
        self.body = body

    @cute.jit
    def __call__(self, first, second):
        self.kernel(first, second).launch(grid=(1, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, first, second):
        self.body(first, second)


def _compile(body, first, second=None) -> str:
    """PTX of a one-warp kernel running ``body(first, second)`` (``second`` defaults to an unused Int32)."""
    second = Int32(0) if second is None else second
    return cute.compile(_OneWarp(body), first, second, options=OPTIONS).artifacts.PTX


def _publish_ptx(scope: str) -> str:
    return _compile(lambda flags, epoch: ReadyFlags(flags, scope).publish(Int32(3), epoch), _gmem(), Int32(FIRST))


@pytest.mark.parametrize("scope", SCOPES, ids=[f"scope-{s}" for s in SCOPES])
def test_publish_is_a_fence_a_warp_sync_and_one_release_store_at_its_scope(scope):
    ptx = _publish_ptx(scope)
    assert f"fence.acq_rel.{scope};" in ptx and f"st.release.{scope}.global.b32" in ptx
    others = [s for s in SCOPES if s != scope]
    assert not any(f"st.release.{s}." in ptx or f"fence.acq_rel.{s};" in ptx for s in others)

    # On every path the release store follows the fence, then the warp sync.
    def transfer(ins: str, state: str) -> str:
        if ins.startswith("fence.acq_rel"):
            return "fenced"
        if ins.startswith("bar.warp.sync") and state == "fenced":
            return "synced"
        return state

    releases = [s for i, s in path_states(kernel_body(ptx), transfer, "none") if i.startswith("st.release")]
    assert releases == [{"synced"}]


def test_step_count_is_a_system_scope_release_reduction_by_one_lane():
    ptx = _compile(lambda counters, _: StepCounters(counters).count(Int32(5)), _gmem())
    assert re.search(r"red\.release\.sys\.global\.add\.u32", ptx)
    assert "bar.warp.sync" in ptx and "st.release" not in ptx and "atom." not in ptx


@pytest.mark.parametrize("report", [True, False])
def test_flag_wait_acquires_at_its_scope_and_traps_with_or_without_a_message(report):
    def body(flags, epoch):
        ReadyFlags(flags, "gpu", "tiles").wait(Int32(7), epoch, timeout_ns=1000, report=report)

    ptx = _compile(body, _gmem(), Int32(FIRST))
    assert "ld.acquire.gpu.global.b32" in ptx and "ld.acquire.sys" not in ptx
    assert "trap;" in ptx and "%globaltimer" in ptx
    assert ("vprintf" in ptx) is report
    if report:  # the message names the flag array and the value it waited for
        assert "flag wait timed out: tiles[" in _strings(ptx) and "waited for epoch" in _strings(ptx)


def test_exact_wait_compares_equality_and_reached_wait_a_signed_difference():
    def body(exact):
        return lambda flags, value: ReadyFlags(flags, "sys").wait(Int32(0), value, exact=exact, report=False)

    exact = kernel_body(_compile(body(True), _gmem(), Int32(1)))
    cyclic = kernel_body(_compile(body(False), _gmem(), Int32(1)))
    assert any(re.match(r"setp\.(ne|eq)\.(s|b)32", i) for i in exact)
    assert any(i.startswith("sub.s32") for i in cyclic) and any(re.match(r"setp\.(lt|ge)\.s32", i) for i in cyclic)


def test_try_wait_is_one_acquire_load_and_no_loop():
    @cute.jit
    def body(flags, epoch):
        if ReadyFlags(flags, "gpu").try_wait(Int32(1), epoch):
            cute.arch.store(flags, Uint32(7))

    ptx = _compile(body, _gmem(), Int32(FIRST))
    assert ptx.count("ld.acquire.gpu.global.b32") == 1 and "%globaltimer" not in ptx and "trap;" not in ptx
    assert "nanosleep" not in ptx


def test_credit_wait_is_bounded_and_grant_is_a_release_of_the_epoch():
    def body(credits, epoch):
        Credits(credits, "sys").wait(Int32(2), epoch)
        Credits(credits, "sys").grant(Int32(2), epoch)

    ptx = _compile(body, _gmem(), Int32(FIRST))
    assert "ld.acquire.sys.global.b32" in ptx and "trap;" in ptx and "st.release.sys.global.b32" in ptx
    unbounded = _compile(lambda c, e: Credits(c, "sys").wait(Int32(2), e, timeout_ns=0), _gmem(), Int32(FIRST))
    assert "trap;" not in unbounded and "ld.acquire.sys.global.b32" in unbounded


def test_tile_copy_moves_16_byte_vectors_through_l2_only():
    from cutlass.cute.runtime import make_fake_tensor

    src = make_fake_tensor(
        cutlass.BFloat16, (cute.sym_int32(), cute.sym_int32()), (cute.sym_int64(), 1), assumed_align=16
    )
    copy = TileCopy(128, 128, unroll=4)
    ptx = _compile(lambda s, dst: copy.copy(s, Int32(1), Int32(2), dst), src, _gmem(cutlass.BFloat16))
    assert "ld.global.cg.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert len(re.findall(r"ld\.global\.cg\.v4", ptx)) == 4  # unroll 4: four loads in flight per lane
    paced = _compile(lambda s, dst: TileCopy(128, 128, 4, 500).copy(s, 0, 0, dst), src, _gmem(cutlass.BFloat16))
    assert "nanosleep" in paced and "nanosleep" not in ptx


# --- static checks: errors name the problem ---------------------------------------------------------------------
def test_scope_errors_name_the_reader_and_the_allowed_scope():
    assert needed_scope("host") == "sys" and needed_scope("device") == "gpu"
    with pytest.raises(ValueError, match="'gpu' is too narrow for a host receiver.*allowed 'sys'"):
        check_reaches("gpu", "host")
    check_reaches("sys", "device")
    with pytest.raises(ValueError, match="allowed one of \\('cta', 'cluster', 'gpu', 'sys'\\)"):
        ReadyFlags(None, "system")
    with pytest.raises(ValueError, match="receiver = 'carrier' is invalid"):
        needed_scope("carrier")


def test_ship_spec_and_tile_copy_errors():
    with pytest.raises(ValueError, match="engine = 'dma' is invalid"):
        ShipSpec((128, 128), engine="dma")
    with pytest.raises(ValueError, match="with engine 'copy'.*allowed 'sys'"):
        ShipSpec((128, 128), engine="copy", scope="gpu", order=TileOrder(1, 1))
    with pytest.raises(ValueError, match="needs order"):
        ShipSpec((128, 128), engine="copy")
    with pytest.raises(ValueError, match="lag = 2 is invalid"):
        ShipSpec((128, 128), slots=2, lag=2)
    with pytest.raises(ValueError, match="tile_n = 192 is invalid"):
        TileCopy(128, 192)
    with pytest.raises(ValueError, match="unroll = 3 must divide"):
        TileCopy(128, 128, unroll=3)
    with pytest.raises(ValueError, match="is for 64×128 tiles"):
        ShipSpec((128, 128), copy=TileCopy(64, 128))
    from pipes.cute import Warps

    with pytest.raises(ValueError, match="comm_warp = 0 is taken by role\\(s\\) \\['load'\\]"):
        TileShipper(ShipSpec((128, 128), comm_warp=0)).declare({"load": Warps(0)}, storing_warp=4)
    pipe, roles = TileShipper(ShipSpec((128, 128))).declare({"load": Warps(0)}, storing_warp=4)
    assert roles["comm"] == Warps(1) and roles["store"] == Warps(4) and pipe.spec.stages == 2


def test_tile_order_rejects_bad_fields():
    with pytest.raises(ValueError, match="raster = 'x' is invalid"):
        TileOrder(1, 1, "x")
    with pytest.raises(ValueError, match="group = 0 is invalid"):
        TileOrder(1, 1, "m", 0)


def test_host_objects_need_torch_only_when_used():
    try:
        import torch  # noqa: F401
    except ImportError:
        from pipes.comm import Receiver

        with pytest.raises(ImportError, match="Receiver.host needs torch"):
            Receiver.host((4, 4), None, flags=1)
    else:
        pytest.skip("torch is installed here: the missing-torch message is checked where it is not")


def test_copy_engine_steps_cover_every_tile_once():
    order = TileOrder(1, 2, "m", 3, step_depth=2)
    steps = plan_steps(order, 5 * 256 - 7, 9 * 128, (256, 128), 2, 9 * 128)
    tiles = sorted(t for s in steps for t in s.tiles)
    assert tiles == list(range(5 * 9))
    index = step_of_tiles(order, 5, 9)
    assert all((index[list(s.tiles)] == s.index).all() for s in steps)


# --- the host consumer, driven by a fake device ---------------------------------------------------------------
def _device(flags, data, epochs, tiles, credits=None, order=None, delay_s=1e-4):
    """A thread that, per epoch, waits for each tile's credit (if given), writes the tile, then its flag."""

    def run():
        for epoch in epochs:
            for t in order or range(tiles):
                if credits is not None:
                    deadline = time.monotonic() + 10
                    while not reached(int(credits[t]), previous(epoch)):
                        assert time.monotonic() < deadline, f"no credit for tile {t} of epoch {epoch}"
                        time.sleep(1e-5)
                data[t] = epoch * 1000 + t
                flags[t] = epoch
                time.sleep(delay_s)

    return threading.Thread(target=run, daemon=True)


def test_consumer_calls_back_once_per_tile_per_launch_and_grants_credits():
    tiles, epochs = 6, [FIRST, FIRST + 1, FIRST + 2]
    flags, credits = np.zeros(tiles, np.uint32), np.zeros(tiles, np.uint32)
    data = np.zeros(tiles, np.int64)
    seen: list[tuple[int, int, int]] = []

    def on_tiles(ready, epoch):
        seen.extend((epoch, int(t), int(data[t])) for t in ready)

    consumer = TileConsumer(flags, epochs, on_tiles, credits=credits, one_at_a_time=True, timeout_s=20)
    consumer.start()
    device = _device(flags, data, epochs, tiles, credits=credits, order=[3, 0, 5, 1, 4, 2])
    device.start()
    device.join(20)
    consumer.join_checked(20)
    assert sorted(seen) == sorted((e, t, e * 1000 + t) for e in epochs for t in range(tiles))  # never stale
    assert (credits == epochs[-1]).all() and consumer.completed == len(epochs)


def test_consumer_with_one_flag_per_step_hands_over_the_steps_tiles_together():
    flags = np.zeros(2, np.uint32)
    calls = []
    consumer = TileConsumer(flags, FIRST, lambda t, e: calls.append(t.tolist()), covers=np.array([0, 0, 1, 1, 1]))
    consumer.start()
    consumer.started_polling.wait()
    flags[1] = FIRST
    time.sleep(0.02)
    flags[0] = FIRST
    consumer.join_checked(10)
    assert calls == [[2, 3, 4], [0, 1]]


def test_consumer_times_out_naming_the_missing_tiles_and_stops_on_request():
    flags = np.zeros(3, np.uint32)
    flags[1] = FIRST
    consumer = TileConsumer(flags, FIRST, lambda t, e: None, timeout_s=0.2)
    consumer.start()
    with pytest.raises(RuntimeError, match="2 tile\\(s\\) never flagged with epoch 2 \\(first missing: \\[0, 2\\]\\)"):
        consumer.join_checked(5)
    stopped = TileConsumer(np.zeros(1, np.uint32), FIRST, lambda t, e: None, timeout_s=60)
    stopped.start()
    stopped.stop()
    stopped.join_checked(5)  # returns promptly, no error


def test_consumer_records_a_failing_callback():
    flags = np.full(2, FIRST, np.uint32)

    def broken(tiles, epoch):
        raise KeyError("checksum table")

    consumer = TileConsumer(flags, FIRST, broken, timeout_s=5)
    consumer.start()
    with pytest.raises(RuntimeError, match="on_tiles failed at epoch 2: KeyError"):
        consumer.join_checked(5)
    with pytest.raises(ValueError, match="epochs is empty"):
        TileConsumer(flags, [], broken)
    with pytest.raises(ValueError, match="credits must hold a word per tile"):
        TileConsumer(flags, FIRST, broken, credits=np.zeros(1, np.uint32))


def _strings(ptx: str) -> str:
    """The PTX's global byte strings (printf formats) decoded."""
    out = []
    for body in re.findall(r"\.global \.align \d+ \.b8 \w+\[\d+\] = \{([^}]*)\}", ptx):
        out.append(bytes(int(b) for b in body.split(",") if b.strip()).decode("utf-8", "replace"))
    return "\n".join(out)


def test_ptx_string_decoder_reads_a_printf_format():
    ptx = ".global .align 1 .b8 fmt[4] = {104, 105, 10, 0};"
    assert _strings(ptx).startswith("hi\n")


def test_dsl_side_epoch_arithmetic_matches_python():
    """``reached`` and ``previous`` on DSL Int32 values compile to the same comparisons the host makes."""
    ptx = _compile(lambda flags, e: ReadyFlags(flags, "sys").wait(0, previous(e), report=False), _gmem(), Int32(2))
    body = kernel_body(ptx)
    assert any(re.match(r"setp\.eq\.(s|b)32", i) for i in body)  # previous(): the FIRST → 0xFFFFFFFF case


def test_the_host_side_imports_neither_cutlass_nor_torch():
    """``import pipes.comm`` (and the scope and epoch facts) stays light: torch and CuTe DSL load on use."""
    import subprocess

    code = (
        "import sys; import pipes.comm, pipes.epoch, pipes.memory_scope, pipes.tile_order; "
        "print(sorted(m for m in ('torch', 'cutlass') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
