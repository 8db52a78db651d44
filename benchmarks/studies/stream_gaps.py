"""What a stream operation between two back-to-back GEMM launches costs them.

The all-gather GEMM's launching stream holds, between one launch's kernel and the next, the wait for
the copy work (an event recorded on a copy stream), the credit write (``cuStreamWriteValue32``, fenced)
and the next launch's start event. On one GPU this study launches our GEMM back to back with each of
those between the kernels, alone and all together, every contender interleaved in rotating order:

* ``gemm``: the kernels alone (auto's configuration without PDL, as the gated GEMM launches);
* ``+ event``: an event recorded on the launching stream;
* ``+ wait``: a wait for an event recorded on an idle side stream;
* ``+ write``: a fenced 32-bit write to a word in this GPU's memory;
* ``+ all``: the all-gather GEMM's three (wait, fenced write, event);
* ``+ memset, write``: what ``CopyEngineShipper.begin`` queues before a reduce-scatter kernel (its step
  counters zeroed, the epoch word written, fenced).

    python benchmarks/studies/stream_gaps.py [--shapes 8192x4096x2048]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import _paths  # noqa: F401
from needs_gpu import cuda_torch
from shape_arg import parse_shapes

SHAPES = [(8192, 4096, 2048), (4096, 4096, 1024)]
ROUNDS = 15
BATCH = 10


def contenders(shape: tuple[int, int, int], torch) -> dict[str, Callable[[], object]]:
    from cuda.bindings import driver as cu
    from cuda.bindings import runtime as cudart
    from gemm_modes.choice import choose_config
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    from pipes.comm.stream_ops import check_cuda, copy_streams, cuda_event

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ops = validate(a, w, out=out)
    config = choose_config(ops.problem, ops.mnk, "auto", None, None, stream_k=False).with_(pdl=False)
    gemm = launcher(config, ops, out)
    word = torch.zeros(1, device="cuda", dtype=torch.int32)
    counters = torch.zeros(64, device="cuda", dtype=torch.int32)
    side = copy_streams(a.device.index or 0, 1)[0].cuda_stream
    event, side_event = cuda_event(), cuda_event()

    def launching():  # noqa: ANN202
        return torch.cuda.current_stream().cuda_stream

    def record() -> None:
        check_cuda(cudart.cudaEventRecord(event, launching())[0], "cudaEventRecord")

    def wait() -> None:
        check_cuda(cudart.cudaEventRecord(side_event, side)[0], "cudaEventRecord")
        check_cuda(cudart.cudaStreamWaitEvent(launching(), side_event, 0)[0], "cudaStreamWaitEvent")

    def write() -> None:
        address = cu.CUdeviceptr(word.data_ptr())
        check_cuda(cu.cuStreamWriteValue32(cu.CUstream(launching()), address, 1, 0)[0], "cuStreamWriteValue32")

    def memset() -> None:
        err = cudart.cudaMemsetAsync(counters.data_ptr(), 0, counters.numel() * 4, launching())
        check_cuda(err[0], "cudaMemsetAsync")

    def after(*ops: Callable[[], None]) -> Callable[[], None]:
        def call() -> None:
            gemm()
            for op in ops:
                op()

        return call

    return {
        "gemm": gemm,
        "+ event": after(record),
        "+ wait": after(wait),
        "+ write": after(write),
        "+ all": after(wait, write, record),
        "+ memset, write": after(memset, write),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK (default: 8192x4096x2048,4096x4096x1024)")
    args = parser.parse_args(argv)
    shapes = parse_shapes(parser, args.shapes) if args.shapes else SHAPES
    torch = cuda_torch("studies/stream_gaps.py", "nothing on the CPU: it times stream operations")
    if torch is None:
        return 0
    from kernel_tools.timing import time_interleaved

    print(f"device: {torch.cuda.get_device_name()}; bf16 randn; {ROUNDS} rounds × {BATCH} launches, median, rotating")
    print(f"{'M×N×K':>16} {'contender':>18} {'µs/launch':>10} {'+µs':>6}")
    for shape in shapes:
        us = time_interleaved(contenders(shape, torch), rounds=ROUNDS, batch=BATCH, rotate=True)
        for name, t in us.items():
            print(f"{'×'.join(map(str, shape)):>16} {name:>18} {t:10.1f} {t - us['gemm']:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
