"""What the multi-GPU examples share: one process per GPU (under torchrun or spawned here), the rank's
device and process group, torch's symmetric-memory group for its fused ops, and the timing of contenders
by the slower rank."""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

#: Hardware work queues per CUDA context. The copy work waits on device memory (credits, flags) that CUDA
#: does not see as a dependency; with the default 8 queues a stream blocked in such a wait stalls every
#: stream sharing its queue. Read when CUDA initializes, so set before the first CUDA call.
CONNECTIONS = "32"

#: µs each timed batch waits on the GPU before its first event while the host queues it. One launch of
#: ours is several calls (the kernel, the copy streams' graph replays, event waits): unheld, a batch of
#: five carried the host's time to queue its first launches, up to +12 % at a 185 µs shape.
QUEUE_AHEAD_US = 1000.0


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is invalid: allowed an int >= 1")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1e6:
        raise argparse.ArgumentTypeError(f"{value:g} is invalid: allowed µs in [0, 1e6]")
    return value


@dataclass(frozen=True)
class Rounds:
    """How the contenders are timed: ``rounds`` interleaved rounds, each batch held ``queue_ahead_us`` on
    the GPU while the host queues it, then started on every rank together
    (``kernel_tools.timing.interleaved_samples``)."""

    rounds: int = 5
    queue_ahead_us: float = QUEUE_AHEAD_US

    def __post_init__(self) -> None:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ValueError(f"rounds = {self.rounds!r} is invalid: allowed an int >= 1")
        if not isinstance(self.queue_ahead_us, (int, float)) or not 0 <= self.queue_ahead_us <= 1e6:
            raise ValueError(f"queue_ahead_us = {self.queue_ahead_us!r} is invalid: allowed µs in [0, 1e6]")

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser, queue_ahead_us: float = QUEUE_AHEAD_US) -> None:
        """``--rounds`` and ``--queue-ahead-us`` (default ``queue_ahead_us``: long enough for the host to
        queue a batch of the example's slowest-to-queue contender)."""
        parser.add_argument("--rounds", type=_at_least_one, default=Rounds.rounds, help="--bench: interleaved rounds")
        parser.add_argument(
            "--queue-ahead-us",
            type=_non_negative,
            default=queue_ahead_us,
            help="--bench: µs each batch waits on the GPU while the host queues it (0: none)",
        )

    @staticmethod
    def of(args: argparse.Namespace) -> Rounds:
        return Rounds(args.rounds, args.queue_ahead_us)


def spawned_or_run(main: Callable[[list[str] | None], int], argv: list[str] | None, world: int, port: int) -> int:
    """Inside a rank (torchrun or our spawn set ``RANK``): 0, the caller runs its rank. Otherwise spawn
    ``world`` processes that each call ``main(argv)`` as one rank, and return 1 when they are done (the
    caller returns 0 then). ``CUDA_DEVICE_MAX_CONNECTIONS`` is set first, for every rank."""
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", CONNECTIONS)
    if "RANK" in os.environ:
        return 0
    import torch.multiprocessing as mp

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    mp.spawn(_rank, args=(main, argv, world), nprocs=world, join=True)
    return 1


def _rank(rank: int, main: Callable[[list[str] | None], int], argv: list[str] | None, world: int) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    code = main(argv)
    if code:
        raise SystemExit(code)


def gpus() -> int:
    """CUDA devices torch sees (0 without torch or CUDA)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def start(world: int | None = None) -> tuple[int, Any]:
    """This process's (rank, device), with the NCCL process group up; ``world``: the only size allowed."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=device, timeout=timedelta(seconds=120))
    if world is not None and dist.get_world_size() != world:
        raise ValueError(f"world size {dist.get_world_size()}: this example runs on exactly {world} GPUs")
    return rank, device


def symm_mem_group() -> str:
    """The world group's name, with torch's symmetric memory enabled for it (the fused ops need it)."""
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    name = dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before torch 2.11, deprecated since
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            symm_mem.enable_symm_mem_for_group(name)
    return name


def torch_op(what: str, build: Callable[[str], Callable[[], Any]]) -> Callable[[], Any] | None:
    """``build(group name)``'s contender, run once; None (and why, printed) where this torch lacks the op."""
    try:
        op = build(symm_mem_group())
        op()
        return op
    except Exception as exc:  # noqa: BLE001 - report, do not fail the benchmark
        print(f"torch {what} unavailable: {type(exc).__name__}: {str(exc)[:160]}")
        return None


def time_by_slower_rank(
    contenders: dict[str, Callable[[], Any]],
    device: Any,
    rounds: Rounds,
    batch: int,
    rounds_out: dict | None = None,
) -> dict:
    """µs per contender (``kernel_tools.timing.interleaved_samples``, each round starting one contender later
    so each follows every other alike), every batch started on all ranks together (a one-element all-reduce
    first), each the slower rank's: a collective takes as long as its last rank. The median over rounds of
    each rank's time, the slowest rank's median. ``rounds_out``: filled with each contender's per-round µs
    of the slowest rank in that round (for :func:`kernel_tools.timing.paired_ratio`). Each batch waits
    ``rounds.queue_ahead_us`` on the GPU before the all-reduce, so the host has queued it before its first
    event (the GPU's time, not the host's) and the ranks start it together: a spin's length differs from
    GPU to GPU by a few µs per ms, which a contender coupling the ranks would be charged for."""
    import statistics

    import torch
    import torch.distributed as dist
    from kernel_tools.timing import interleaved_samples

    align = torch.zeros(1, device=device)
    settle = lambda: dist.all_reduce(align)  # noqa: E731
    samples = interleaved_samples(
        contenders, rounds.rounds, batch, settle=settle, rotate=True, queue_ahead_us=rounds.queue_ahead_us
    )
    worst = torch.tensor([statistics.median(samples[c]) for c in contenders], device=device, dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    if rounds_out is not None:
        each = torch.tensor([samples[c] for c in contenders], device=device, dtype=torch.float64)
        dist.all_reduce(each, op=dist.ReduceOp.MAX)
        rounds_out.update(zip(contenders, each.tolist(), strict=True))
    return dict(zip(contenders, worst.tolist(), strict=True))


def speedup_summary(speedups: list[float], vs_torch: list[float | None]) -> str | None:
    """One line over a table's timed shapes: the mean and lowest S (sequential / ours), and on how many
    shapes ours beat torch's fused op; None when nothing was timed."""
    if not speedups:
        return None
    line = f"mean S {sum(speedups) / len(speedups):.2f} over {len(speedups)} shapes (lowest {min(speedups):.2f})"
    timed = [v for v in vs_torch if v is not None]
    if timed:
        line += f"; faster than torch's fused op on {sum(v > 1 for v in timed)} of {len(timed)}"
    return line


def timeline_line(shape: list[int], timeline: dict, items: str) -> str:
    """Rank 0's copy-engine timeline of one shape in one line (``--timeline``): when the kernel ended and the
    credits were taken, then ``items``, the steps or chunk copies as the caller words them (µs from the
    launch's start)."""
    return (
        f"timeline {'×'.join(map(str, shape))}, rank 0, µs from the launch's start: kernel ended "
        f"{timeline['kernel_end']:.0f}, credits taken {timeline['credits_taken']:.0f}, {items}"
    )


def steady_timeline(
    launch: Callable[[], Any], engine: Any, before_timed: Callable[[], Any] | None = None
) -> tuple[Any, list[dict]]:
    """``engine``'s timeline (a copy-engine object with ``timed`` and ``timeline_us``) of one launch after
    five back to back, and every rank's kernel end, last outgoing flag and ``period``: from that launch's
    start to the end of all its work on the launching stream, where the next launch would start (the
    steady state's time per launch on that rank). µs; every rank calls it together. ``before_timed``:
    queued on the launching stream right before the timed launch (e.g. zeroing what it should count)."""
    import torch
    import torch.distributed as dist

    engine.timed = True
    for _ in range(5):
        launch()
    if before_timed is not None:
        before_timed()
    began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began.record()
    launch()
    ended.record()
    t = engine.timeline_us()
    engine.timed = False
    mine = {"kernel_end": t.kernel, "last_flag": max(t.steps), "period": began.elapsed_time(ended) * 1000}
    every: list = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)
    return t, every


def every_rank_line(every: list[dict]) -> str:
    """:func:`steady_timeline`'s per-rank figures in one line."""
    each = ", ".join(f"{q}: {e['kernel_end']:.0f}/{e['last_flag']:.0f}/{e['period']:.0f}" for q, e in enumerate(every))
    return f"  every rank, kernel ended / last outgoing flag / launch period (µs): {each}"


def report_footer(rows: list[dict], vs_torch: str, items: Callable[[dict], str]) -> None:
    """Under a benchmark table: :func:`speedup_summary` of the timed rows (``vs_torch``: the row key of S
    against torch's fused op), then each ``--timeline`` row's :func:`timeline_line` (``items`` words its
    steps or copies) and :func:`every_rank_line`."""
    timed = [r for r in rows if "S" in r]
    summary = speedup_summary([r["S"] for r in timed], [r.get(vs_torch) for r in timed])
    if summary:
        print(summary)
    for r in rows:
        if "timeline" in r:
            print(timeline_line(r["shape"], r["timeline"], items(r["timeline"])))
            print(every_rank_line(r["timeline"]["ranks"]))
