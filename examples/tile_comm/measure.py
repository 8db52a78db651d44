"""Overlap, measured in one process: the fused kernel against its parts and the sequential baseline.

For one shape and transport, with identical ``torch.randn`` inputs for every contender, timed with
``kernel_tools.timing.time_interleaved`` (every contender in every round; median of rounds):

* ``gemm_plain`` — the GEMM alone (``hopper_gemm``, no comm: examples/persistent_gemm.py's kernel);
* ``gemm_none``  — the fused kernel with transport ``none`` (notify machinery, nothing shipped);
* ``comm_alone`` — the communication warps without the GEMM, moving the same bytes: T_comm (engine
  ``copy``: the copy engine's steps, nothing to wait for);
* ``fused``      — the fused kernel with the transport: T_fused;
* ``torch_matmul``, ``copy`` (``copy_`` of C to pinned host memory / to a device buffer), and
  ``sequential`` (torch.matmul, then that copy, back to back).

E = (T_gemm + T_comm − T_fused) / min(T_gemm, T_comm) with T_gemm = min(gemm_plain, gemm_none);
S = T_sequential / T_fused; R = T_fused / T_gemm(none) − 1.

Every batch starts after three untimed matmuls and the order rotates each round
(``kernel_tools.timing``): on a power-capped H100 a 3 ms GEMM otherwise runs several percent faster
when its batch follows a copy than when it follows another GEMM.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Overlap:
    device: str
    shape: tuple[int, int, int]
    dtype: str
    transport: str
    config: str
    us: dict[str, float] = field(default_factory=dict)

    @property
    def t_gemm(self) -> float:
        """The faster of the GEMM alone and the fused kernel shipping nothing: the smaller T_gemm gives the
        smaller (never flattering) E. At 8192×8192×16384 on a power-capped H100 'none' measured anywhere
        from −0.5 % to +11 % against the GEMM alone between runs; taking it alone could push E above 1."""
        return min(self.us["gemm_none"], self.us["gemm_plain"])

    @property
    def t_comm(self) -> float:
        return self.us["comm_alone"]

    @property
    def efficiency(self) -> float:
        """E: the share of the shorter of (GEMM, comm) hidden under the other."""
        return overlap_efficiency(self.t_gemm, self.t_comm, self.us["fused"])

    @property
    def speedup(self) -> float:
        """S: torch.matmul then the copy, over the fused kernel."""
        return self.us["sequential"] / self.us["fused"]

    @property
    def regret(self) -> float:
        """R: what shipping costs the GEMM (against the fused kernel shipping nothing)."""
        return self.us["fused"] / self.us["gemm_none"] - 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"E": self.efficiency, "S": self.speedup, "R": self.regret}


def overlap_efficiency(t_gemm: float, t_comm: float, t_fused: float) -> float:
    return (t_gemm + t_comm - t_fused) / min(t_gemm, t_comm)


COLUMNS = (
    ("shape", 16),
    ("transport", 9),
    ("torch mm", 9),
    ("copy", 8),
    ("seq", 8),
    ("gemm", 8),
    ("none", 8),
    ("alone", 8),
    ("fused", 8),
    ("E", 5),
    ("S", 5),
    ("R", 6),
)


def header() -> str:
    return " ".join(f"{name:>{width}}" for name, width in COLUMNS)


def row(o: Overlap) -> str:
    m, n, k = o.shape
    u = o.us
    cells = [f"{m}×{n}×{k}", o.transport]
    cells += [f"{u[key]:.0f}" for key in ("torch_matmul", "copy", "sequential", "gemm_plain", "gemm_none")]
    cells += [f"{u['comm_alone']:.0f}", f"{u['fused']:.0f}"]
    cells += [f"{o.efficiency:.2f}", f"{o.speedup:.2f}", f"{o.regret:+.3f}"]
    return " ".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True))


def measure(
    m: int,
    n: int,
    k: int,
    transport: str,
    dtype: str = "bf16",
    config: Any = None,
    comm: Any = None,
    rounds: int = 10,
    batch: int = 10,
) -> Overlap:
    """Time every contender of one (shape, transport) in one interleaved run (needs a GPU).

    ``config``: the GEMM configuration (default: the measured table's cooperative choice); ``comm``: the
    communication warp's :class:`~tile_comm.config.CommConfig` (default: the transport's)."""
    import torch
    from kernel_tools.timing import time_interleaved

    from .launcher import EpilogueComm, default_config

    a, b = _operands(m, n, k, dtype, seed=2)
    from .config import CommConfig

    comm = comm if comm is not None else CommConfig.default(transport)
    config = config if config is not None else default_config(m, n, k, dtype, comm)
    fused = EpilogueComm(a, b, transport, config=config, comm=comm)
    none = EpilogueComm(a, b, "none", config=config)
    plain = plain_gemm(a, b, config)
    if transport == "host":
        copy_dst = torch.empty(m, n, dtype=a.dtype, pin_memory=True)
    else:
        copy_dst = torch.empty(m, n, dtype=a.dtype, device="cuda")
    fused.launch()
    torch.cuda.synchronize()

    def sequential() -> None:
        copy_dst.copy_(torch.matmul(a, b.t()), non_blocking=True)

    def matmul() -> None:
        torch.matmul(a, b.t())

    contenders = {
        "torch_matmul": matmul,
        "copy": lambda: copy_dst.copy_(fused.out, non_blocking=True),
        "sequential": sequential,
        "gemm_plain": plain,
        "gemm_none": none.launch,
        "comm_alone": fused.launch_alone,
        "fused": fused.launch,
    }
    # Every batch starts from the power state of a running GEMM (see kernel_tools.timing): 3 matmuls first.
    us = time_interleaved(
        contenders, rounds=rounds, batch=batch, settle=lambda: [matmul() for _ in range(3)], rotate=True
    )
    label = f"{config.describe()}, {fused.comm.describe()}"
    shown = f"{transport}/{fused.comm.engine.value}" if transport in ("host", "local") else transport
    return Overlap(torch.cuda.get_device_name(), (m, n, k), dtype, shown, label, us)


@dataclass
class PairedCost:
    """How much longer one kernel takes than another of the same power profile, ``what`` describing the
    pair (paired rounds: ``kernel_tools.timing.time_paired``): 'none' against the GEMM alone, and R, small
    differences that a 7-way interleave answers with the contenders' power states mixed in."""

    device: str
    shape: tuple[int, int, int]
    what: str
    config: str
    ratio: Any  # kernel_tools.timing.PairedRatio

    def as_dict(self) -> dict[str, Any]:
        fields = {"device": self.device, "shape": self.shape, "what": self.what, "config": self.config}
        return fields | asdict(self.ratio)


def _operands(m: int, n: int, k: int, dtype: str, seed: int) -> tuple[Any, Any]:
    import torch

    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=tdt, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=tdt, generator=g)  # (N, K): C = a @ b.T
    return a, b


def none_cost(m: int, n: int, k: int, dtype: str = "bf16", config: Any = None, rounds: int = 40) -> PairedCost:
    """The issue-9 row "``none`` within 1 % of examples/persistent_gemm.py": the two kernels, same inputs,
    timed in paired rounds (needs a GPU). ``config``: default the GEMM's own (``schedule="auto"``'s
    cooperative choice, what persistent_gemm.py runs)."""
    import torch
    from kernel_tools.timing import time_paired

    from .launcher import EpilogueComm, default_config

    a, b = _operands(m, n, k, dtype, seed=3)
    config = config if config is not None else default_config(m, n, k, dtype)
    none = EpilogueComm(a, b, "none", config=config)
    plain = plain_gemm(a, b, config)
    ratio = time_paired(plain, none.launch, rounds)
    return PairedCost(torch.cuda.get_device_name(), (m, n, k), "none / GEMM alone", config.describe(), ratio)


def regret(m: int, n: int, k: int, transport: str = "local", dtype: str = "bf16", rounds: int = 40) -> PairedCost:
    """R = T_fused / T_gemm(none) − 1 in paired rounds: the fused kernel with ``transport`` (its default
    engine and configuration) against the same kernel shipping nothing (needs a GPU)."""
    import torch
    from kernel_tools.timing import time_paired

    from .launcher import EpilogueComm

    a, b = _operands(m, n, k, dtype, seed=4)
    fused = EpilogueComm(a, b, transport)
    none = EpilogueComm(a, b, "none", config=fused.config)
    ratio = time_paired(none.launch, fused.launch, rounds)
    label = f"{fused.config.describe()}, {fused.comm.describe()}"
    return PairedCost(torch.cuda.get_device_name(), (m, n, k), f"{transport} / none", label, ratio)


def plain_gemm(a: Any, b: Any, config: Any) -> Any:
    """A launcher of examples/persistent_gemm.py's kernel for ``a @ b.T`` with ``config`` (no comm)."""
    import torch
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    out = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=a.dtype)
    return launcher(config, validate(a, b, out=out), out)
