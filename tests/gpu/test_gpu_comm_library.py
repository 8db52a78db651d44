"""The comm library's host objects on a GPU machine: receivers validate their memory when made."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_receivers_check_their_memory_and_scope():
    torch = pytest.importorskip("torch")
    from pipes.comm import Receiver

    host = Receiver.host((4, 64, 128), torch.bfloat16, flags=4, credits=4)
    assert host.scope == "sys" and host.data.is_pinned() and host.device.index is not None
    device = Receiver.on_device((4, 64, 128), torch.bfloat16, flags=4)  # "cuda": the current device, by index
    assert device.scope == "gpu" and device.device == torch.device("cuda", torch.cuda.current_device())
    with pytest.raises(ValueError, match="scope = 'gpu' is too narrow for a host receiver.*allowed 'sys'"):
        host.check_scope("gpu")
    device.check_scope("sys")  # wider than needed is correct
    words = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(ValueError, match="must be page-locked host memory.*got a pageable CPU tensor"):
        Receiver("host", torch.zeros(4, 64, 128, dtype=torch.bfloat16), words, words, "cuda")
    with pytest.raises(ValueError, match="a device receiver's data must be on cuda:0.*got a tensor on cpu"):
        Receiver("device", torch.zeros(4), device.flags, device.credits, "cuda:0")
    if torch.cuda.device_count() > 1:
        other = torch.zeros(4, device="cuda:1")
        with pytest.raises(ValueError, match="must be on cuda:0.*got a tensor on cuda:1"):
            Receiver("device", other, device.flags, device.credits, "cuda:0")
    with pytest.raises(ValueError, match="flags must be int32 words"):
        Receiver("device", device.data, device.flags.float(), device.credits, "cuda")
    assert all(address > 0 for address in host.addresses())  # the pinned buffers' device-mapped addresses
    host.grant([1, 2], 0xFFFFFFFF)
    assert host.credits.tolist() == [0, -1, -1, 0]


def test_a_kernels_counted_steps_are_shipped_by_the_copy_engine():
    """The library's copy-engine path end to end with a kernel that is not the GEMM: examples/ship_tiles.py's
    kernel with ``TileShipper(engine="copy")`` counts each finished tile into its row's step, and a
    ``CopyEngineShipper`` copies each complete row into a device receiver and raises the row's flag. 16 CTAs
    walk 64 tiles (the hand-off ring wraps), 20 launches back to back, each checked bit for bit."""
    torch = pytest.importorskip("torch")
    import ship_tiles as st
    from bounded import synchronize
    from cuda.bindings import driver
    from cutlass import Float32, Int32
    from cutlass.cute.runtime import from_dlpack

    from pipes.comm import CopyEngineShipper, CopyTarget, Epochs, Receiver, plan_steps, ship_args
    from pipes.epoch import as_int32

    m, n = 512, 1024  # 8 × 8 tiles of 64 × 128: 8 row steps
    steps = plan_steps(st.ROW_STEPS, m, n, (st.TM, st.TN), 2, n)
    assert len(steps) == m // st.TM and all(len(s.tiles) == n // st.TN for s in steps)
    rx = Receiver.on_device((m, n), torch.bfloat16, flags=len(steps), credits=1)
    counters = torch.zeros(len(steps), dtype=torch.int32, device="cuda")
    y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    _, flags, credits = rx.addresses()
    shipper = CopyEngineShipper(y, CopyTarget(rx.data, flags, credits, counters), steps, streams=2)
    compiled = st.compile_kernel("sys", "copy")
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    xt, yt = (from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=1) for t in (x, y))
    stream = driver.CUstream(torch.cuda.current_stream().cuda_stream)
    epochs = Epochs()
    for launch in range(20):
        alpha = 1.0 + launch / 8
        epoch = epochs.next()
        shipper.begin(epoch)  # the counters to 0, the epoch word, the start event
        compiled(xt, yt, Float32(alpha), Int32(16), stream, ship_args(rx, epoch, counters=counters))
        shipper.ship(epoch)  # after the kernel's launch call: each step waits for its count, copies, flags
        synchronize(60)
        want = (x.float() * alpha).to(torch.bfloat16)
        assert torch.equal(y, want) and torch.equal(rx.data, want), f"launch {launch}: rows differ"
        assert (rx.flags == as_int32(epoch)).all(), rx.flags.tolist()
