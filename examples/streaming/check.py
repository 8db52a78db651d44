"""Correctness runs on the GPU: every output element against a float64 reference, NaN-poisoned outputs,
bitwise repeatability. Used by ``--check`` and by ``tests/gpu/test_gpu_rmsnorm.py``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .api import axpby, rmsnorm
from .plan import StreamConfig
from .reference import ErrorReport, axpby_reference, error_report, rmsnorm_reference, torch_dtype

EPS = 1e-6


@dataclass(frozen=True)
class CheckResult:
    op: str
    dtype: str
    m: int
    n: int
    config: str
    worst: float  # worst |error| / bound (<= 1 passes)
    bad: int  # elements over the bound, NaN (unwritten) included
    repeatable: bool  # a second call wrote the same bits
    # Where the worst element is, and how large the bad elements' references are: a failure log then
    # tells a rounding question near zero (all bad |ref| tiny) from a wrong value, without a re-run.
    worst_at: tuple[int, ...] | None = None
    worst_ref: float = 0.0
    bad_ref_max: float = 0.0

    @property
    def ok(self) -> bool:
        return self.bad == 0 and self.repeatable

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _inputs(shape: tuple[int, ...], dtype: str, seed: int, count: int) -> list[Any]:
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [
        torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32).to(torch_dtype(dtype))
        for _ in range(count)
    ]


def check_rmsnorm(m: int, n: int, dtype: str, config: StreamConfig | None = None, seed: int = 0) -> CheckResult:
    import torch

    (x,) = _inputs((m, n), dtype, seed, 1)
    (w,) = _inputs((n,), dtype, seed + 1, 1)
    out = torch.full_like(x, float("nan"))  # every element the kernel misses stays NaN
    rmsnorm(x, w, EPS, out=out, config=config)
    again = torch.full_like(x, float("nan"))
    rmsnorm(x, w, EPS, out=again, config=config)
    torch.cuda.synchronize()
    report = error_report(out, rmsnorm_reference(x, w, EPS), dtype)
    return _result("rmsnorm", dtype, m, n, config, report, same_bits(out, again))


def check_axpby(
    m: int,
    n: int,
    dtype: str,
    config: StreamConfig | None = None,
    seed: int = 0,
    alpha: float = 1.5,
    beta: float = -0.75,
) -> CheckResult:
    import torch

    x, y = _inputs((m, n), dtype, seed, 2)
    out = torch.full_like(x, float("nan"))
    axpby(x, y, alpha, beta, out=out, config=config)
    again = torch.full_like(x, float("nan"))
    axpby(x, y, alpha, beta, out=again, config=config)
    torch.cuda.synchronize()
    scale = (alpha * x.double()).abs() + (beta * y.double()).abs()
    report = error_report(out, axpby_reference(x, y, alpha, beta), dtype, scale)
    return _result("axpby", dtype, m, n, config, report, same_bits(out, again))


def _result(
    op: str, dtype: str, m: int, n: int, config: StreamConfig | None, report: ErrorReport, repeatable: bool
) -> CheckResult:
    return CheckResult(
        op,
        dtype,
        m,
        n,
        _label(config),
        report.worst,
        report.bad,
        repeatable,
        report.worst_at,
        report.worst_ref,
        report.bad_ref_max,
    )


def same_bits(a: Any, b: Any) -> bool:
    """Bitwise equality (NaN payloads included), via an integer view of the same width."""
    import torch

    as_int = {2: torch.int16, 4: torch.int32}[a.element_size()]
    return bool(torch.equal(a.view(as_int), b.view(as_int)))


def _label(config: StreamConfig | None) -> str:
    if config is None:
        return "default"
    fields = {k: v for k, v in vars(config).items() if v != getattr(StreamConfig(), k)}
    return ",".join(f"{k}={getattr(v, 'value', v)}" for k, v in fields.items()) or "default"


#: The CLI's --check sweep: odd shapes (M = 1, N not a multiple of the chunk, N = 256 and the maximum).
CHECK_SHAPES: tuple[tuple[str, int, int], ...] = (
    ("rmsnorm", 1, 8192),
    ("rmsnorm", 37, 256),
    ("rmsnorm", 300, 1000),
    ("rmsnorm", 129, 1024),
    ("rmsnorm", 65, 4096),
    ("rmsnorm", 33, 12288),
    ("rmsnorm", 17, 32768),
    ("axpby", 1, 256),
    ("axpby", 300, 1000),
    ("axpby", 77, 8192),
    ("axpby", 5, 32768),
)
