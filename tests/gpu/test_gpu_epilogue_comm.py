"""examples/epilogue_comm.py on the GPU: every tile arrives bit for bit at every transport, flags advance
once per launch, 1,000 back-to-back launches, a slowed communication warp and a slowed host receiver.

Small shapes throughout (seconds in all). A hang would stall the whole run: every wait here is bounded
(:func:`_synchronize`), and the lead runs the file under ``timeout``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from bounded import synchronize as _synchronize

pytestmark = pytest.mark.gpu


from hopper_gemm.config import GemmConfig, Schedule  # noqa: E402

COOP_256x128 = GemmConfig(256, 128, 1, 2, Schedule.COOPERATIVE)  # the measured default (cluster 1×2)
COOP_128x256 = GemmConfig(128, 256, 2, 1, Schedule.COOPERATIVE)  # cluster 2×1: hangs over M's edge
REL_BOUND = {"fp16": 2e-3, "bf16": 1.6e-2}


def _torch():
    return pytest.importorskip("torch")


def _operands(m, n, k, dtype="bf16", seed=0, count=1):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    b = torch.randn(n, k, device="cuda", dtype=tdt, generator=g)
    a = [torch.randn(m, k, device="cuda", dtype=tdt, generator=g) for _ in range(count)]
    return (a[0] if count == 1 else a), b


def _i32(epoch: int) -> int:
    return epoch - (1 << 32) if epoch >= 1 << 31 else epoch


def _launcher(a, b, variant, **kwargs):
    """``host`` (the copy engine, host's default), ``host-sm`` (the comm warp copies), ``local`` (the comm
    warp copies), ``local-copy`` (the copy engine, device to device), ``none``."""
    from tile_comm.config import CommConfig
    from tile_comm.launcher import EpilogueComm

    if variant == "host-sm":
        return EpilogueComm(a, b, "host", comm=CommConfig("host", pace_ns=1000), **kwargs)
    if variant == "local-copy":
        return EpilogueComm(a, b, "local", comm=CommConfig("local", engine="copy"), **kwargs)
    return EpilogueComm(a, b, variant, **kwargs)


def _check_receiver(fused, epoch, ctas=True):
    torch = _torch()
    rx = fused.receiver
    got = rx.untiled(fused.m, fused.n).to(fused.out.device)
    assert torch.equal(got, fused.out), f"{int((got != fused.out).sum())} elements differ at the receiver"
    flags = rx.tile_flags()
    assert int((flags == _i32(epoch)).sum()) == rx.tiles, f"flags: {flags.tolist()[:16]}... expected {epoch}"
    if ctas:  # every CTA's start and end flag
        ctas = rx.ctas.to("cpu")[: 2 * fused.ctas]
        assert int((ctas == _i32(epoch)).sum()) == 2 * fused.ctas


@pytest.mark.parametrize("config", [COOP_256x128, COOP_128x256], ids=["256x128c12", "128x256c21"])
@pytest.mark.parametrize("transport", ["host", "host-sm", "local", "local-copy", "none"])
def test_every_tile_arrives_bit_for_bit(transport, config):
    torch = _torch()
    from tile_comm.consumer import HostConsumer

    m, n, k = 3 * 256 + 40, 5 * 128 + 24, 520  # ragged in M, N and K
    a, b = _operands(m, n, k)
    fused = _launcher(a, b, transport, config=config)
    fused.out.fill_(float("nan"))
    epoch = fused.receiver.next_epoch()
    consumer = None
    if transport.startswith("host"):
        consumer = HostConsumer(fused.receiver, epoch, fused.ctas, timeout_s=30)
        consumer.start()
        consumer.started_polling.wait()
    fused.launch(epoch=epoch)
    if consumer is not None:
        consumer.join(60)
    _synchronize()
    ref = a.float() @ b.float().t()
    assert not torch.isnan(fused.out).any()
    assert ((fused.out.float() - ref).abs().max() / ref.abs().max()).item() <= REL_BOUND["bf16"]
    if transport != "none":
        _check_receiver(fused, epoch)
    if consumer is not None:
        assert consumer.verify() == []  # each tile's checksum when its flag appeared = its final contents
        assert (consumer.result.seen_ns >= 0).all()


@pytest.mark.parametrize("transport", ["local", "local-copy"])
def test_each_launch_advances_every_flag_once(transport):
    a, b = _operands(1024, 1024, 256)
    fused = _launcher(a, b, transport)
    for _ in range(3):
        epoch = fused.launch()
        _synchronize()
        _check_receiver(fused, epoch)


def test_comm_warps_alone_ship_the_same_bytes():
    a, b = _operands(1024, 768, 256)
    for transport in ("host", "host-sm", "local", "local-copy"):
        fused = _launcher(a, b, transport)
        fused.launch()
        _synchronize()
        fused.receiver.data.zero_()
        epoch = fused.launch_alone()
        _synchronize()
        # The copy engine alone has no CTAs to raise start/end flags.
        _check_receiver(fused, epoch, ctas=fused.shipper is None)


def test_copy_engine_ships_steps_while_the_kernel_runs():
    """16 CTAs walk 8 waves of tiles: the host sees the first steps land long before the last CTA ends.
    K is long enough that the host thread polls many times while the kernel runs, also when the launching
    thread holds the interpreter for the launch calls: the interpreter's switch interval (5 ms by default,
    longer than the kernel) is lowered for the launch, so the polling thread is never held off that long."""
    import sys

    from tile_comm.consumer import HostConsumer

    a, b = _operands(2048, 2048, 32768)
    fused = _launcher(a, b, "host", max_clusters=8)
    assert fused.shipper is not None and fused.ctas == 16
    fused.launch()
    _synchronize()
    epoch = fused.receiver.next_epoch()
    consumer = HostConsumer(fused.receiver, epoch, fused.ctas, timeout_s=30)
    consumer.start()
    consumer.started_polling.wait()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        fused.launch(epoch=epoch)
        consumer.join(60)
    finally:
        sys.setswitchinterval(interval)
    _synchronize()
    _check_receiver(fused, epoch)
    assert consumer.verify() == []
    seen = consumer.result
    first, last = int(seen.seen_ns.min()), int(seen.seen_ns.max())
    assert last > first and seen.end_ns > first  # the first step landed before the kernel ended
    assert first - seen.start_ns < 0.5 * (seen.end_ns - seen.start_ns), seen.summary()


def _pair(transport, m=512, n=512, k=256):
    """Two launchers (different A) sharing one receiver: consecutive launches ship different tiles."""
    (a0, a1), b = _operands(m, n, k, count=2)
    first = _launcher(a0, b, transport)
    second = _launcher(a1, b, transport, receiver=first.receiver)
    return first, second


def test_thousand_back_to_back_launches_local():
    torch = _torch()
    first, second = _pair("local")
    rx = first.receiver
    bad_data = torch.zeros((), dtype=torch.int64, device="cuda")
    bad_flags = torch.zeros((), dtype=torch.int64, device="cuda")
    start = time.perf_counter()
    for i in range(1000):
        fused = first if i % 2 == 0 else second
        epoch = fused.launch()
        # Checked on the stream, between launches: this launch's tiles, not the previous one's.
        bad_data += (rx.untiled(fused.m, fused.n) != fused.out).sum()
        bad_flags += (rx.flags != _i32(epoch)).sum()
    _synchronize(120)
    assert int(bad_data) == 0 and int(bad_flags) == 0
    print(f"1000 launches in {time.perf_counter() - start:.2f} s")


def _expected_checksums(first, second):
    """Launch each operand set once; the checksums its tiles must have at the receiver."""
    expected = []
    rx = first.receiver
    for fused in (first, second):
        fused.launch()
        _synchronize()
        expected.append(rx.checksums(data=rx.expected(fused.out).cpu()))
    first.receiver.acknowledge_all()  # nobody consumed those two launches
    return expected


# Launches queued ahead of the receiving thread: the launching thread waits (GIL released) beyond this,
# so it never blocks inside a full launch queue while holding the GIL the receiver needs.
AHEAD = 32


@pytest.mark.parametrize("transport", ["host", "host-sm"])
def test_thousand_back_to_back_launches_host_with_a_receiving_thread(transport):
    from tile_comm.consumer import HostConsumer

    first, second = _pair(transport)
    rx = first.receiver
    expected = _expected_checksums(first, second)
    epochs = [rx.epoch + 1 + i for i in range(1000)]
    consumer = HostConsumer(rx, epochs, first.ctas, credits=True, timeout_s=120)
    consumer.start()
    for i, epoch in enumerate(epochs):
        while i - consumer.completed > AHEAD and consumer.is_alive():
            time.sleep(1e-4)
        (first if i % 2 == 0 else second).launch(epoch=epoch, credits=True)
    rx.epoch = epochs[-1]
    consumer.join(150)
    _synchronize(30)
    assert consumer.verify([expected[i % 2] for i in range(len(epochs))]) == []


def _per_cta_tiles(stamps, tiles, ctas):
    from tile_comm.args import CTA_STAMPS, EPI_BEGIN, MAX_TRACED_CTAS, PUSH_END, TILE_CTA, TILE_STAMPS

    per_tile = stamps[MAX_TRACED_CTAS * CTA_STAMPS :][: tiles * TILE_STAMPS].reshape(tiles, TILE_STAMPS)
    shipped = np.flatnonzero(per_tile[:, PUSH_END] > 0)
    out = {}
    for cta in range(ctas):
        mine = shipped[per_tile[shipped, TILE_CTA] == cta]
        out[cta] = per_tile[mine[np.argsort(per_tile[mine, EPI_BEGIN])]]
    return out


@pytest.mark.parametrize("transport", ["local", "host"])
def test_slowed_comm_warp_back_pressures_the_epilogue(transport):
    from tile_comm.args import EPI_END, PUSH_END

    a, b = _operands(2048, 1024, 128)
    fused = _launcher(a, b, transport, max_clusters=2)  # 4 CTAs, 64 tiles: 16 per CTA through 2 slots
    slots = fused.comm.slots
    delay_ns = 20_000
    epoch = fused.launch(delay_ns=delay_ns, stamps=True)
    _synchronize()
    _check_receiver(fused, epoch)
    per_cta = _per_cta_tiles(fused.receiver.stamps.cpu().numpy(), fused.receiver.tiles, fused.ctas)
    assert sum(len(t) for t in per_cta.values()) == fused.receiver.tiles
    for cta, rows in per_cta.items():
        assert len(rows) > slots + 1
        pushes = np.diff(rows[:, PUSH_END])
        assert (pushes >= delay_ns * 0.9).all(), f"CTA {cta}: pushes closer than the delay: {pushes.min()} ns"
        # A tile's commit needs the slot of the tile `slots` earlier back: its push must have ended.
        held = rows[slots:, EPI_END] - rows[:-slots, PUSH_END]
        assert (held >= 0).all(), f"CTA {cta}: an epilogue committed into a slot still being shipped"


@pytest.mark.parametrize("transport", ["host", "host-sm"])
def test_slowed_host_receiver_holds_back_the_next_launch(transport):
    from tile_comm.consumer import HostConsumer

    first, second = _pair(transport, m=512, n=512, k=128)
    rx = first.receiver
    expected = _expected_checksums(first, second)
    epochs = [rx.epoch + 1 + i for i in range(3)]
    consumer = HostConsumer(rx, epochs, first.ctas, delay_s=2e-3, credits=True, timeout_s=60)
    consumer.start()
    start = time.perf_counter()
    for i, epoch in enumerate(epochs):
        (first if i % 2 == 0 else second).launch(epoch=epoch, credits=True)
    rx.epoch = epochs[-1]
    _synchronize(60)
    gpu_done = time.perf_counter()
    consumer.join(60)
    assert consumer.verify([expected[i % 2] for i in range(3)]) == []
    # The last launch could only ship each tile once the receiver had consumed it from the launch before.
    slowest = (len(epochs) - 1) * rx.tiles * 2e-3
    assert gpu_done - start >= 0.9 * slowest, f"the GPU finished in {gpu_done - start:.3f} s < {slowest:.3f} s"


def test_trace_draws_a_timeline(tmp_path):
    from tile_comm.consumer import HostConsumer
    from tile_comm.launcher import EpilogueComm
    from tile_comm.timeline import overlap_summary, render

    a, b = _operands(2048, 2048, 2048)
    fused = EpilogueComm(a, b, "host")
    epoch = fused.receiver.next_epoch()
    consumer = HostConsumer(fused.receiver, epoch, fused.ctas)
    consumer.start()
    consumer.started_polling.wait()
    fused.launch(epoch=epoch, stamps=True)
    consumer.join(60)
    _synchronize()
    out_dir = Path(os.environ.get("OUT", tmp_path))
    path = out_dir / "epilogue_comm_timeline.png"
    spans = render(fused.receiver.stamps, fused.receiver, fused.ctas, str(path), "test", consumer.result)
    assert path.stat().st_size > 1000
    roles = {s.role for s in spans}
    assert roles == {"MMA mainloop", "epilogue stores", "comm push", "host consumed"}
    for s in spans:
        assert s.end_us >= s.start_us >= -1.0, s
    assert overlap_summary(spans)["push_us"] > 0


def test_bad_input_fails_before_launch():
    torch = _torch()
    from tile_comm.launcher import EpilogueComm

    a, b = _operands(256, 256, 64)
    with pytest.raises(ValueError, match="pin_memory=True"):  # the copy engine's receive buffer: C's rows
        EpilogueComm(a, b, "host", data=torch.zeros(256, 256, dtype=a.dtype))
    with pytest.raises(ValueError, match="pin_memory=True"):  # the sm engine's: tile-major
        _launcher(a, b, "host-sm", data=torch.zeros(2, 256, 128, dtype=a.dtype))
    with pytest.raises(ValueError, match=r"shape \(tiles_m"):
        EpilogueComm(a, b, "host", data=torch.zeros(2, 256, 128, dtype=a.dtype, pin_memory=True))
    with pytest.raises(ValueError, match="shape mismatch"):
        EpilogueComm(a, b[:, :32], "host")
    with pytest.raises(ValueError, match="dtype"):
        EpilogueComm(a.float(), b.float(), "local")
    with pytest.raises(ValueError, match="multiple of 8"):
        EpilogueComm(a, b[:250], "local")
    with pytest.raises(ValueError, match="cooperative"):
        EpilogueComm(a, b, "local", config=GemmConfig(128, 128, 2, 1, Schedule.PINGPONG))
    with pytest.raises(ValueError, match="allowed"):
        EpilogueComm(a, b, "pigeon")
