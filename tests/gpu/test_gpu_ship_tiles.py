"""examples/ship_tiles.py on the GPU: every tile arrives bit for bit at a host and a device receiver, 1,000
back-to-back launches with credits and a receiving thread see no stale tile, a slowed host reader still gets
every tile, a flag that never comes traps with its message, and two GPUs ship to each other.

Small shapes throughout (seconds in all). Every wait here is bounded (:func:`_synchronize`, the consumer's
``timeout_s``), so a hang fails a test instead of stalling the run.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bounded import synchronize as _synchronize

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "contrib")]

import ship_tiles as st  # noqa: E402
import ship_tiles_cli as cli  # noqa: E402

M, N = 256, 512  # 4 × 4 tiles of 64 × 128


def _torch():
    return pytest.importorskip("torch")


def _sender(kind: str, m: int = M, n: int = N) -> st.Sender:
    torch = _torch()
    from pipes.comm import Receiver

    tiles = m // st.TM * (n // st.TN)
    make = Receiver.host if kind == "host" else Receiver.on_device
    device = torch.cuda.current_device()  # an explicit index: Receiver.on_device's default "cuda" != "cuda:0"
    return st.Sender(make((tiles, st.TM, st.TN), torch.bfloat16, flags=tiles, credits=tiles, device=device), m, n)


def _want(x, alphas):
    """Per launch, the checksum of every tile it must deliver."""
    torch = _torch()
    distinct = {a: st.checksums(st.expected(x, a)).cpu() for a in set(alphas)}
    return torch.stack([distinct[a] for a in alphas])


@pytest.mark.parametrize("kind", ["host", "device"])
def test_every_tile_arrives_bit_for_bit(kind):
    torch = _torch()
    from pipes.epoch import as_int32

    sender, x = _sender(kind), cli.make_x(M, N, seed=1)
    sender.y.fill_(float("nan"))
    landed = st.ship(sender, x, [0.75], timeout_s=60)
    _synchronize()
    rx = sender.receiver
    assert torch.equal(sender.y, (x.float() * 0.75).to(torch.bfloat16))  # Y itself, bit for bit
    assert torch.equal(rx.data.to(x.device), st.expected(x, 0.75)), "the receive buffer differs from Y's tiles"
    assert bool((rx.flags.to(x.device) == as_int32(sender.epochs.current)).all()), rx.flags.tolist()
    assert torch.equal(landed, _want(x, [0.75]))  # each tile as its reader saw it when its flag came
    if kind == "host":
        assert bool((rx.credits == as_int32(sender.epochs.current)).all())  # the reader granted every tile


@pytest.mark.parametrize("kind", ["host", "device"])
def test_thousand_back_to_back_launches_see_no_stale_tile(kind):
    """Consecutive launches ship different tiles (alpha cycles through 4 values): a tile the reader saw from
    the launch before, or one overwritten while it read it, fails the per-launch checksum."""
    torch = _torch()
    sender, x = _sender(kind), cli.make_x(M, N, seed=2)
    alphas = [0.5 * (1 + (i % 4) / 4) for i in range(1000)]
    start = time.perf_counter()
    landed = st.ship(sender, x, alphas, timeout_s=240)
    _synchronize(120)
    bad = (landed != _want(x, alphas)).any(dim=1).nonzero().flatten().tolist()
    assert not bad, f"{len(bad)} launches delivered a wrong tile (first: {bad[:8]})"
    assert torch.equal(sender.receiver.data.to(x.device), st.expected(x, alphas[-1]))
    print(f"\n[gpu] {kind}: 1000 launches of {M}×{N} in {time.perf_counter() - start:.2f} s, every tile as expected")


def test_slowed_host_reader_still_gets_every_tile():
    """The reader takes one tile at a time and sleeps 5 ms on each, far slower than the GPU: the comm warps of
    the next launches wait for its credits, and every tile of every launch arrives as that launch shipped it."""
    sender, x = _sender("host"), cli.make_x(M, N, seed=3)
    alphas = [0.5, 0.625, 0.75, 0.875]
    landed = st.ship(sender, x, alphas, delay_s=0.005, timeout_s=120, one_at_a_time=True)
    _synchronize()
    bad = (landed != _want(x, alphas)).nonzero().tolist()
    assert not bad, f"(launch, tile) pairs that arrived wrong: {bad[:8]}"


def test_bad_input_fails_before_launch():
    torch = _torch()
    sender = _sender("device")
    with pytest.raises(ValueError, match="allowed a contiguous tensor of torch.bfloat16"):
        sender.launch(torch.zeros(M, N, device="cuda"), 1.0)  # fp32
    with pytest.raises(ValueError, match=r"\(256, 512\)"):
        sender.launch(torch.zeros(M, 2 * N, device="cuda", dtype=torch.bfloat16), 1.0)
    with pytest.raises(ValueError, match="N = 500 is invalid"):
        _sender("device", M, 500)
    with pytest.raises(ValueError, match="pin_memory=True"):  # a host receiver in pageable memory
        from pipes.comm import Receiver

        words = torch.zeros(16, dtype=torch.int32)
        Receiver("host", torch.zeros(16, 64, 128, dtype=torch.bfloat16), words, words.clone(), "cuda")


def test_a_flag_that_never_comes_traps_with_its_message():
    """A kernel waits (ReadyFlags.wait, 50 ms) for a flag nobody raises: it must trap and say which flag and
    what it waited for, not hang. Run as a subprocess: the trap destroys the CUDA context."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=300, env=env)
    output = proc.stdout + proc.stderr
    assert "RESULT: completed" not in output, "the wait returned on a flag nobody raised"
    assert proc.returncode != 0 and "RESULT: trapped" in output, output[-3000:]
    assert "pipes: flag wait timed out: never_raised[0] = 0, waited for epoch 2 (sys scope)" in output, output[-3000:]


def test_two_gpus_ship_to_each_other():
    torch = _torch()
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs (peer receiver); {torch.cuda.device_count()} visible")
    cmd = [sys.executable, str(ROOT / "examples" / "ship_tiles.py"), "--receiver", "peer", "--m", "256"]
    cmd += ["--n", "512", "--launches", "6"]
    done = subprocess.run(cmd, env=dict(os.environ, MASTER_PORT="29547"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("bit for bit: True") == 2, done.stdout


def _never_raised() -> int:
    """One thread waits 50 ms for ``flags[0]`` to reach epoch 2; nothing writes it. Prints ``RESULT: trapped``
    (exit 3) or ``RESULT: completed`` (exit 0: the wait returned, a failure of the test)."""
    import cutlass.cute as cute
    import torch
    from cuda.bindings import driver
    from cutlass import Uint32
    from cutlass.cute.runtime import make_ptr

    from pipes.cute.comm import ReadyFlags
    from pipes.epoch import FIRST

    @cute.kernel
    def kernel(flags: cute.Pointer):
        if cute.arch.thread_idx()[0] == 0:
            ReadyFlags(flags, "sys", "never_raised").wait(0, FIRST, timeout_ns=50_000_000)

    @cute.jit
    def launch(flags: cute.Pointer, stream):
        kernel(flags).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)

    words = torch.zeros(1, dtype=torch.int32, device="cuda")
    flags = make_ptr(Uint32, words.data_ptr(), cute.AddressSpace.gmem, assumed_align=4)
    stream = driver.CUstream(torch.cuda.current_stream().cuda_stream)
    compiled = cute.compile(launch, flags, stream)
    try:
        compiled(flags, stream)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - any launch failure is what we expect
        print(f"RESULT: trapped ({type(exc).__name__})", flush=True)
        return 3
    print("RESULT: completed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_never_raised())
