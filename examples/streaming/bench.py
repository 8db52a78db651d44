"""Measurements behind ``--bench`` and ``benchmarks/streaming_kernels.py``: bandwidth against a copy of the same
bytes and against torch, small-M latency. Each configuration's output is checked before it is timed
(NaN-poisoned, sampled rows against float64), so a broken pipeline cannot post a figure."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .api import axpby, bind_rmsnorm, rmsnorm
from .build import kernel_for
from .check import EPS
from .plan import Op, StreamConfig, make_plan
from .reference import axpby_reference, error_report, rmsnorm_reference, torch_dtype
from .timing import copy_gbps, graph_us, host_us, time_us

ALPHA, BETA = 0.5, 1.0  # beta = 1: torch.add(y, x, alpha=ALPHA) is then one fused kernel of the same bytes


@dataclass
class Row:
    """One measured configuration. ``ratio`` = GB/s over the copy's GB/s of the same bytes, same process."""

    kernel: str
    dtype: str
    m: int
    n: int
    stages: int
    ctas_per_sm: int
    store: str
    in_flight_kib: int  # load bytes the rings of one SM can have in flight
    us: float
    gbps: float
    copy_gbps: float
    torch_us: float | None = None
    graph_us: float | None = None
    torch_graph_us: float | None = None
    check_worst: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.gbps / self.copy_gbps

    @property
    def vs_torch(self) -> float | None:
        """torch time / our time (> 1: faster than torch)."""
        return self.torch_us / self.us if self.torch_us else None

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "vs_torch": self.vs_torch}


class CheckFailed(AssertionError):
    pass


def _sample_rows(m: int) -> Any:
    import torch

    head = torch.arange(min(m, 128))
    tail = torch.arange(max(0, m - 128), m)
    middle = torch.linspace(0, m - 1, steps=min(m, 256)).long()
    return torch.unique(torch.cat([head, tail, middle]))


def _verify(what: str, out: Any, ref_fn: Any, dtype: str, rows: Any, scale_fn: Any = None) -> float:
    import torch

    if torch.isnan(out).any():
        raise CheckFailed(f"{what}: {int(torch.isnan(out).sum())} output elements never written (NaN)")
    idx = rows.to(out.device)
    report = error_report(out[idx], ref_fn(idx), dtype, scale_fn(idx) if scale_fn else None)
    if report.bad:
        raise CheckFailed(
            f"{what}: {report.bad} sampled elements off the float64 reference (worst {report.worst:.2f}× the "
            f"bound; largest |ref| among them {report.bad_ref_max:.3g})"
        )
    return report.worst


def bench_rmsnorm(
    m: int,
    n: int,
    dtype: str,
    config: StreamConfig | None = None,
    *,
    copy: float | None = None,
    baseline: bool = True,
    iters: int = 20,
    repeats: int = 5,
) -> Row:
    """Bandwidth of rmsnorm on (m, n) randn inputs: bytes = read x + write out (+ the weight, once)."""
    import torch
    import torch.nn.functional as F

    plan = make_plan(Op.RMSNORM, dtype, n, config)
    gen = torch.Generator(device="cuda").manual_seed(m * 131 + n)
    x = torch.randn(m, n, generator=gen, device="cuda").to(torch_dtype(dtype))
    w = torch.randn(n, generator=gen, device="cuda").to(torch_dtype(dtype))
    out = torch.full_like(x, float("nan"))
    kernel_for(plan)  # compile outside the timing
    rmsnorm(x, w, EPS, out=out, config=config)
    worst = _verify(
        f"rmsnorm {dtype} {m}×{n} {plan.describe()}",
        out,
        lambda i: rmsnorm_reference(x[i], w, EPS),
        dtype,
        _sample_rows(m),
    )
    nbytes = 2 * m * n * plan.element_bytes + n * plan.element_bytes
    us = time_us(lambda: rmsnorm(x, w, EPS, out=out, config=config), iters=iters, repeats=repeats)
    torch_us = None
    if baseline:
        torch_us = time_us(lambda: F.rms_norm(x, (n,), w, EPS), iters=iters, repeats=repeats)
    copy = copy if copy is not None else copy_gbps(nbytes, x.device, iters=iters, repeats=repeats)
    return Row(
        "rmsnorm",
        dtype,
        m,
        n,
        plan.stages,
        plan.ctas_per_sm,
        plan.config.store.value,
        plan.bytes_in_flight * plan.ctas_per_sm // 1024,
        us,
        nbytes / us / 1e3,
        copy,
        torch_us,
        check_worst=worst,
    )


def bench_axpby(
    m: int,
    n: int,
    dtype: str,
    config: StreamConfig | None = None,
    *,
    copy: float | None = None,
    baseline: bool = True,
    iters: int = 20,
    repeats: int = 5,
) -> Row:
    """Bandwidth of ``out = ALPHA·x + BETA·y``: bytes = read x, y + write out."""
    import torch

    plan = make_plan(Op.AXPBY, dtype, n, config)
    gen = torch.Generator(device="cuda").manual_seed(m * 71 + n)
    x = torch.randn(m, n, generator=gen, device="cuda").to(torch_dtype(dtype))
    y = torch.randn(m, n, generator=gen, device="cuda").to(torch_dtype(dtype))
    out = torch.full_like(x, float("nan"))
    kernel_for(plan)
    axpby(x, y, ALPHA, BETA, out=out, config=config)
    worst = _verify(
        f"axpby {dtype} {m}×{n} {plan.describe()}",
        out,
        lambda i: axpby_reference(x[i], y[i], ALPHA, BETA),
        dtype,
        _sample_rows(m),
        lambda i: (ALPHA * x[i].double()).abs() + (BETA * y[i].double()).abs(),
    )
    nbytes = 3 * m * n * plan.element_bytes
    us = time_us(lambda: axpby(x, y, ALPHA, BETA, out=out, config=config), iters=iters, repeats=repeats)
    torch_us = None
    if baseline:
        torch_us = time_us(lambda: torch.add(y, x, alpha=ALPHA, out=out), iters=iters, repeats=repeats)
    copy = copy if copy is not None else copy_gbps(nbytes, x.device, iters=iters, repeats=repeats)
    return Row(
        "axpby",
        dtype,
        m,
        n,
        plan.stages,
        plan.ctas_per_sm,
        plan.config.store.value,
        plan.bytes_in_flight * plan.ctas_per_sm // 1024,
        us,
        nbytes / us / 1e3,
        copy,
        torch_us,
        check_worst=worst,
    )


def bench_small_m(m: int, n: int, dtype: str, *, iters: int = 50, repeats: int = 7) -> Row:
    """Latency of one call at small M, three ways to call ours against ``F.rms_norm``.

    ``us``: back-to-back ``rmsnorm(x, w, eps)`` (allocates its output, like torch: the same work for the
    caller), timed with CUDA events, so host work included. ``extra``: ``out_us`` (``out=`` given) and
    ``bound_us`` (``bind_rmsnorm(...)()``: same tensors, only the stream and the launch per call) and
    ``graph_call_us`` (``bind_rmsnorm(..., graph=True)()``: one ``cudaGraphLaunch`` per call), each
    also as pure host time (``*host_us``: what the Python side costs per call; when it equals the event
    time the host is the bound), and the CUDA-graph replay of ours and torch's (GPU time only)."""
    import torch
    import torch.nn.functional as F

    plan = make_plan(Op.RMSNORM, dtype, n)
    gen = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, n, generator=gen, device="cuda").to(torch_dtype(dtype))
    w = torch.randn(n, generator=gen, device="cuda").to(torch_dtype(dtype))
    out = torch.full_like(x, float("nan"))
    rmsnorm(x, w, EPS, out=out)
    rows = torch.arange(m)
    worst = _verify(f"rmsnorm {dtype} {m}×{n}", out, lambda i: rmsnorm_reference(x[i], w, EPS), dtype, rows)
    bound = bind_rmsnorm(x, w, EPS, out=torch.full_like(x, float("nan")))  # poisoned: unwritten stays NaN
    bound()
    _verify(f"bind_rmsnorm {dtype} {m}×{n}", bound.out, lambda i: rmsnorm_reference(x[i], w, EPS), dtype, rows)
    graphed = bind_rmsnorm(x, w, EPS, out=torch.full_like(x, float("nan")), graph=True)
    graphed()
    torch.cuda.synchronize()
    _verify(f"bind_rmsnorm graph {dtype} {m}×{n}", graphed.out, lambda i: rmsnorm_reference(x[i], w, EPS), dtype, rows)
    calls = {
        "": lambda: rmsnorm(x, w, EPS),
        "out_": lambda: rmsnorm(x, w, EPS, out=out),
        "bound_": bound,
        "graph_call_": graphed,
        "torch_": lambda: F.rms_norm(x, (n,), w, EPS),
    }
    extra: dict[str, float | None] = {}
    for name, fn in calls.items():
        extra[f"{name}us"] = time_us(fn, iters=iters, repeats=repeats)
        extra[f"{name}host_us"] = host_us(fn, iters=iters, repeats=repeats)
    ours_graph = graph_us(lambda: rmsnorm(x, w, EPS, out=out), iters=iters, repeats=repeats)
    theirs_graph = graph_us(lambda: F.rms_norm(x, (n,), w, EPS), iters=iters, repeats=repeats)
    nbytes = 2 * m * n * plan.element_bytes + n * plan.element_bytes
    ours = extra.pop("us")
    return Row(
        "rmsnorm",
        dtype,
        m,
        n,
        plan.stages,
        plan.ctas_per_sm,
        plan.config.store.value,
        plan.bytes_in_flight * plan.ctas_per_sm // 1024,
        ours,
        nbytes / ours / 1e3,
        float("nan"),
        extra.pop("torch_us"),
        ours_graph,
        theirs_graph,
        check_worst=worst,
        extra=extra,
    )
