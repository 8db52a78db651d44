"""The command line of examples/ship_tiles.py: run it on a GPU, or compile and prove it without one.

python examples/ship_tiles.py [--m 1024 --n 2048 --receiver host|device|peer --launches 3 --check]
torchrun --nproc-per-node 2 examples/ship_tiles.py --receiver peer --rows 512   # or it spawns the two ranks
(--rows/--cols are --m/--n: torchrun would take --m and --n as abbreviations of its own options)
"""

import argparse
import functools
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import cutlass.cute as cute
from ship_tiles import RECEIVERS, TM, TN, Sender, check_input, checksums, compile_kernel, expected, fake_arguments, ship
from ship_tiles_proof import BUGS, prove

from pipes.comm import PeerChannel, Receiver
from pipes.cute.comm import needed_scope
from pipes.epoch import as_int32

try:
    import torch
except ImportError:  # a CPU-only install: compile and prove only
    torch = None


class CompileReport(NamedTuple):
    """What ptxas made of the kernel: its PTX, registers per thread and spilled bytes."""

    ptx: str
    registers: int
    spills: int

    @property
    def resources(self) -> tuple[int, int]:
        return self.registers, self.spills


@functools.cache
def compile_report(scope: str = "sys", engine: str = "sm") -> CompileReport:
    """Compile for sm_90a with ptxas remarks (no GPU needed)."""
    kernel, arguments = fake_arguments(scope, engine)
    with tempfile.TemporaryDirectory() as tmp:  # --keep-ptx writes here, not into the checkout
        options = f"--gpu-arch sm_90a --keep-ptx --dump-dir {tmp} remarks{{ptx}} --remark-output {tmp}/remarks.yaml"
        compiled = cute.compile(kernel, *arguments, options=options)
        text = Path(tmp, "remarks.yaml").read_text()
    registers = int(re.search(r"Used (\d+) registers", text).group(1))
    spills = sum(int(b) for b in re.findall(r"(\d+) bytes spill (?:stores|loads)", text))
    return CompileReport(compiled.artifacts.PTX, registers, spills)


def alphas_of(args: argparse.Namespace) -> list[float]:
    return [args.alpha * (1 + (i % 4) / 4) for i in range(args.launches)]  # consecutive launches ship other tiles


def make_x(m: int, n: int, seed: int = 0):
    return torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(seed))


def run(args: argparse.Namespace) -> int:
    tiles, make = args.m // TM * (args.n // TN), Receiver.host if args.receiver == "host" else Receiver.on_device
    receiver = make((tiles, TM, TN), torch.bfloat16, flags=tiles, credits=tiles)
    sender = Sender(receiver, args.m, args.n)
    x, alphas = make_x(args.m, args.n), alphas_of(args)
    compile_kernel(receiver.scope)  # before the clock starts (cached: the first launch finds it)
    start = time.perf_counter()
    landed = ship(sender, x, alphas)
    seconds = time.perf_counter() - start
    same = torch.equal(landed, torch.stack([checksums(expected(x, a)).cpu() for a in alphas]))
    exact = torch.equal(sender.receiver.data.to(x.device), expected(x, alphas[-1]))
    shape = f"{args.m}×{args.n} bf16, {tiles} tiles of {TM}×{TN} on {sender.grid} CTAs"
    print(f"{torch.cuda.get_device_name()}: Y = alpha·X, {shape}, {args.receiver} receiver")
    reader = "a receiving thread, credits" if args.receiver == "host" else "a checksum kernel after each"
    print(f"  {args.launches} launches in {seconds * 1e3:.1f} ms ({reader})")
    print(f"  each tile's checksum as it landed == expected: {same}; receive buffer bit for bit: {exact}")
    if args.check:
        exact &= torch.equal(sender.y, (x.float() * alphas[-1]).to(torch.bfloat16))
        print(f"  check: Y == torch (x.float() * alpha).bfloat16() bit for bit: {exact}")
    print("OK" if same and exact else "FAILED")
    return 0 if same and exact else 1


def run_peer(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Two ranks ship to each other's inbox (``PeerChannel``); each checks what arrived from the other."""
    import torch.distributed as dist

    if "RANK" not in os.environ:  # not under torchrun: spawn the two ranks
        if torch.cuda.device_count() < 2:
            print(f"--receiver peer needs 2 GPUs; {torch.cuda.device_count()} visible here: nothing run")
            return 0
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        torch.multiprocessing.spawn(_rank, args=(argv,), nprocs=2, join=True)
        return 0
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    tiles = args.m // TM * (args.n // TN)
    channel = PeerChannel.create((tiles, TM, TN), torch.bfloat16, flags=tiles, credits=tiles)
    sender, inbox = Sender(channel.outbox, args.m, args.n), channel.inbox
    mine, theirs = make_x(args.m, args.n, seed=rank), make_x(args.m, args.n, seed=1 - rank)
    ok = True
    for alpha in alphas_of(args):
        epoch = sender.launch(mine, alpha, credits=True)
        torch.cuda.synchronize()
        dist.barrier()  # both kernels have ended: the other rank's tiles are in my inbox
        ok &= torch.equal(inbox.data, expected(theirs, alpha)) and bool((inbox.flags == as_int32(epoch)).all())
        inbox.grant_all(epoch)  # consumed: the other rank's next launch may overwrite my inbox
        torch.cuda.synchronize()
        dist.barrier()
    print(f"rank {rank}: {args.launches} launches; the other rank's tiles in my inbox bit for bit: {ok}")
    dist.destroy_process_group()
    return 0 if ok else 1


def _rank(rank: int, argv: list[str] | None) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank))
    if main(argv):
        raise SystemExit(1)


def no_gpu_report(args: argparse.Namespace) -> int:
    scope = needed_scope(args.receiver)
    print("no CUDA GPU here: compiling for sm_90a instead (nothing runs)")
    registers, spills = compile_report(scope).resources
    print(f"  ShipTiles, {args.receiver} receiver, flags at {scope} scope: {registers} registers, spills {spills} B")
    print(f"protocol (pipes.check; storing warp, comm warp, {args.receiver} reader, credits; 2 launches × 3 tiles):")
    report = prove(args.receiver)
    print("  " + str(report).splitlines()[0])
    for bug in BUGS:
        found = prove(args.receiver, bug).findings
        print(f"  planted {bug:<15}: {found[0].kind.name if found else 'nothing found'}")
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", "--rows", dest="m", type=int, default=1024)
    p.add_argument("--n", "--cols", dest="n", type=int, default=2048)
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--receiver", choices=RECEIVERS, default="host")
    p.add_argument("--launches", type=int, default=3)
    p.add_argument("--check", action="store_true", help="also compare Y with torch bit for bit")
    args = p.parse_args(argv)
    try:
        check_input(args.m, args.n, args.receiver, args.launches)
    except ValueError as error:
        print(f"ship_tiles.py: error: {error}", file=sys.stderr)
        return 2
    if torch is None or not torch.cuda.is_available():
        return no_gpu_report(args)
    return run_peer(args, argv) if args.receiver == "peer" else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
