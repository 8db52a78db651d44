"""Run a store-notify kernel whose reader never releases its first tile, in debug mode.

The producer's acquire of slot 0 one lap later can never succeed; debug mode must print
``pipes: wait timed out: pipeline=tiles_out role=epi op=acquire slot=0 phase=0 …`` and trap.
The reader sleeps ~1.5 s per tile so that the producer's 300 ms bound expires first. Prints
``RESULT: trapped`` (exit 3) or ``RESULT: completed`` (exit 0, a failure of the test).
Run as a subprocess: the trap destroys the CUDA context.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cute_kernels as ck  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import torch  # noqa: E402
from cutlass import Int32  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402
from cutlass.torch import current_stream  # noqa: E402

from pipes.cute import DebugConfig  # noqa: E402


def main() -> int:
    stages, tiles = 2, 8
    built = ck.build_store_notify(stages, 1, debug=DebugConfig(timeout_ns=300_000_000), plant_deadlock=True)
    gout = torch.zeros((stages * ck.TILE, ck.TILE), dtype=torch.int32, device="cuda")
    out = torch.full((1, 1, 32, 2), -1, dtype=torch.int32, device="cuda")
    args = (from_dlpack(gout, assumed_align=16), from_dlpack(out, assumed_align=16), Int32(tiles), Int32(1_500_000_000))
    stream = current_stream()
    compiled = cute.compile(built.launcher, *args, stream)
    try:
        compiled(*args, stream)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - any launch failure is what we expect
        print(f"RESULT: trapped ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})", flush=True)
        return 3
    print("RESULT: completed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
