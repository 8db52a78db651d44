"""``gemm(a, b, ...)`` on torch tensors: validate, pick a configuration, compile once, launch.

Every check runs before anything compiles or launches; a bad argument is a ``ValueError`` that names it.
The configuration is the measured table's (``schedule="auto"``, :func:`gemm_modes.choice.choose_config`)
or the one asked for. Shapes are dynamic: one compile per (configuration, problem) serves every M, N, K.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .config import ACTIVATIONS, Problem, Schedule

_ALIGN_BYTES = 16  # TMA: global addresses and row strides are multiples of 16 bytes


def dtype_name(dtype: Any) -> str | None:
    import torch

    return {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(dtype)


@dataclass(frozen=True)
class Operands:
    """The validated call: tensors viewed the way the kernel reads them, and the problem's facts."""

    a: Any  # (M, K), K contiguous
    b_nk: Any  # (N, K): K contiguous ("k") or N contiguous ("n")
    out: Any  # (M, N): row-major, or column-major where problem.c_major is "m" (swapped)
    bias: Any
    alpha: float
    problem: Problem

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.a.shape[0], self.b_nk.shape[0], self.a.shape[1]


def validate(
    a: Any,
    b: Any,
    *,
    bias: Any = None,
    alpha: float = 1.0,
    out: Any = None,
    b_layout: str = "nk",
    activation: str | None = None,
) -> Operands:
    """Check every argument; returns the operands as the kernel sees them. ``b_layout``: ``"nk"``, ``b`` is
    (N, K) (``a @ b.T``, the ``nn.Linear`` weight); ``"kn"``, ``b`` is (K, N) (``a @ b``). ``activation``:
    one of ``config.ACTIVATIONS``, applied last."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation = {activation!r} is invalid: allowed one of {list(ACTIVATIONS)}")
    import torch

    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if dtype_name(t.dtype) is None:
            raise ValueError(f"{name}.dtype = {t.dtype} is not supported: allowed torch.float16 or torch.bfloat16")
    if a.dtype != b.dtype:
        raise ValueError(f"a.dtype = {a.dtype} and b.dtype = {b.dtype} differ: both fp16 or both bf16")
    if b_layout not in ("nk", "kn"):
        raise ValueError(f"b_layout = {b_layout!r} is invalid: allowed 'nk' (b is (N, K)) or 'kn' (b is (K, N))")
    m, k = a.shape
    n, kb = (b.shape[0], b.shape[1]) if b_layout == "nk" else (b.shape[1], b.shape[0])
    if kb != k:
        what = "b.shape[1]" if b_layout == "nk" else "b.shape[0]"
        raise ValueError(
            f"shape mismatch: a is {tuple(a.shape)} (K = {k}) but {what} = {kb} (b is {tuple(b.shape)}, {b_layout})"
        )
    if min(m, n, k) < 1:
        raise ValueError(f"empty problem: M, N, K = {m}, {n}, {k}")
    if k % 8:
        raise ValueError(f"K = {k} is invalid: allowed a multiple of 8 (TMA needs 16-byte rows of A and B)")
    if b_layout == "kn" and n % 8:
        raise ValueError(f"N = {n} is invalid with b_layout='kn': allowed a multiple of 8 (16-byte rows of b)")
    _contiguous_rows("a", a)
    _contiguous_rows("b", b)
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or bias.dim() != 1 or bias.shape[0] != n:
            got = tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__
            raise ValueError(f"bias must be a 1-D tensor of length N = {n}, got {got}")
        if bias.dtype != a.dtype:
            raise ValueError(f"bias.dtype = {bias.dtype} must equal a.dtype = {a.dtype}")
        if not bias.is_contiguous():
            raise ValueError("bias must be contiguous")
        _aligned("bias", bias)
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        raise ValueError(f"alpha = {alpha!r} is invalid: allowed a Python float")
    if out is not None:
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (m, n):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"out must be a tensor of shape (M, N) = {(m, n)}, got {got}")
        if out.dtype != a.dtype:
            raise ValueError(f"out.dtype = {out.dtype} must equal a.dtype = {a.dtype}")
        if not out.is_contiguous() or n % 8:
            raise ValueError(
                "out must be contiguous with N a multiple of 8 (TMA stores 16-byte rows); "
                "pass out=None to get a result for any N"
            )
        _aligned("out", out)
    tensors = [("a", a), ("b", b)] + [(nm, t) for nm, t in (("bias", bias), ("out", out)) if t is not None]
    for name, t in tensors:
        if t.device.type != "cuda":
            raise ValueError(f"{name} is on {t.device}: every tensor must be on the same CUDA device")
    devices = {t.device for _, t in tensors}
    if len(devices) != 1:
        raise ValueError(f"tensors are on different devices: {sorted(str(d) for d in devices)}")
    (device,) = devices
    current = torch.cuda.current_device()
    if device.index != current:
        raise ValueError(
            f"the tensors are on {device} but the current CUDA device is cuda:{current} (the kernel launches "
            f"on the current device's stream): call gemm inside `with torch.cuda.device({device.index}):`"
        )
    problem = Problem(
        dtype_name(a.dtype),
        "k" if b_layout == "nk" else "n",
        bias=bias is not None,
        scaled=float(alpha) != 1.0,
        activation=activation,
    )
    b_nk = b if b_layout == "nk" else b.t()
    return Operands(a, b_nk, out, bias, float(alpha), problem)


def check_swappable(problem: Problem) -> None:
    """``ValueError`` unless a call of ``problem`` can run swapped (:func:`swapped`)."""
    if problem.bias:
        raise ValueError("a swapped GEMM (Cᵀ = B·Aᵀ) takes no bias: the bias adds along N, the rows of Cᵀ")
    if problem.b_major != "k":
        raise ValueError("a swapped GEMM (Cᵀ = B·Aᵀ) needs B as (N, K), K contiguous (b_layout='nk'): B is A'")


def swapped(ops: Operands) -> Operands:
    """The same product computed as Cᵀ = B·Aᵀ: A' = B (N, K), B' = A (M, K), written into C's memory read as
    Cᵀ (N, M), column-major. A tile's M extent then runs along N, where a warpgroup's wgmma rows (64 at a
    time) do not bind: 4104² takes 192 × 176 tiles (176 along M) as 22 × 24 = 528 = 4 waves of 132 SMs.
    ``ValueError`` with a bias (it adds along N, the swapped problem's rows), with B (K, N) (A' would be
    M-major) or without ``out``."""
    check_swappable(ops.problem)
    if ops.out is None:
        raise ValueError("a swapped GEMM (Cᵀ = B·Aᵀ) writes into out: pass out (M, N), row-major")
    problem = dataclasses.replace(ops.problem, c_major="m")
    return Operands(ops.b_nk, ops.a, ops.out.t(), None, ops.alpha, problem)


def _contiguous_rows(name: str, t: Any) -> None:
    if t.stride(1) != 1 or t.stride(0) < t.shape[1]:
        raise ValueError(
            f"{name} must be row-major with contiguous rows (stride {t.stride()}); use {name}.contiguous()"
        )
    if (t.stride(0) * t.element_size()) % _ALIGN_BYTES:
        raise ValueError(f"{name}'s row stride {t.stride(0)} × {t.element_size()} B is not a multiple of 16 bytes")
    _aligned(name, t)


def _aligned(name: str, t: Any) -> None:
    if t.data_ptr() % _ALIGN_BYTES:
        raise ValueError(f"{name}.data_ptr() is not 16-byte aligned (a sliced view?); use {name}.clone()")


def gemm(
    a: Any,
    b: Any,
    *,
    bias: Any = None,
    alpha: float = 1.0,
    out: Any = None,
    b_layout: str = "nk",
    schedule: str = "auto",
    tile: tuple[int, int] | None = None,
    cluster: tuple[int, int] | None = None,
    stream_k: bool | str | None = None,
    split_k: int | None = None,
    swap_ab: bool | None = None,
    pdl: bool = True,
    activation: str | None = None,
) -> Any:
    """``alpha · a @ b.T + bias`` (``b_layout="nk"``, b is (N, K)) or ``alpha · a @ b + bias`` (``"kn"``),
    then ``activation`` if given (``"gelu_tanh"``: torch's ``gelu(approximate="tanh")``, on the fp32 value).

    fp16/bf16 in and out, fp32 accumulation. ``schedule``: ``"auto"`` (the measured table of
    ``contrib/gemm_modes``), ``"cooperative"`` or ``"pingpong"``; ``tile`` / ``cluster`` / ``stream_k`` /
    ``split_k`` override the table's choice (:mod:`gemm_modes.modes`: ``stream_k`` True, False,
    ``"remainder"`` or ``"aligned"``; ``split_k`` parts per tile). ``swap_ab``: True computes Cᵀ = B·Aᵀ
    into the result read column by column (:func:`swapped`; no bias, ``b_layout="nk"``; a ``tile`` is then
    (extent along N, extent along M)), False never; None: where the table picks it. ``pdl``: programmatic
    dependent launch (:attr:`GemmConfig.pdl`): after another such launch this kernel's set-up overlaps that
    kernel's tail.
    Checks and choice run once per call key (every argument but the tensors' data, and the stream;
    :func:`gemm_modes.call_cache.cached_call`); a later call with that key only writes the new pointers.
    """
    from gemm_modes.call_cache import cached_call
    from gemm_modes.choice import choose_config, device_sms
    from gemm_modes.launch import without_unheld_ring_staging, without_unheld_split_k

    def checked() -> tuple[Any, Operands, tuple[int, int, int] | None]:
        if schedule not in ("auto", *(s.value for s in Schedule)):
            raise ValueError(f"schedule = {schedule!r} is invalid: allowed 'auto', 'cooperative' or 'pingpong'")
        if not isinstance(pdl, bool):
            raise ValueError(f"pdl = {pdl!r} is invalid: allowed True or False")
        ops = validate(a, b, bias=bias, alpha=alpha, out=out, b_layout=b_layout, activation=activation)
        (m, n, _), device = ops.mnk, a.device.index or 0
        sms = device_sms(device)
        config = choose_config(
            ops.problem, ops.mnk, schedule, tile, cluster, stream_k, sms=sms, split_k=split_k, swap_ab=swap_ab
        )
        if split_k is None:  # the table's split-K counted SMs / 2 clusters: a GPU may hold fewer at once
            config = without_unheld_split_k(config, m, n, device)
        config = without_unheld_ring_staging(config, m, n, device).with_(pdl=pdl)
        # TMA stores rows whose stride is a multiple of 16 bytes: for N not a multiple of 8 the result is a
        # view of padded rows (the padding's contents are unspecified: the GPU run found zeros written there).
        return config, ops, None if out is not None else (m, n, (n + 7) // 8 * 8)

    options = (alpha, b_layout, schedule, tile, cluster, stream_k, split_k, swap_ab, pdl, activation)
    return cached_call((a, b, bias, out), options, checked)
