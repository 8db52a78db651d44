"""A benchmark contender's launcher, launched once into a NaN-poisoned output and checked against torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def checked_launcher(config: Any, operands: tuple[Any, Any, Any], ref: Any, label: str) -> Callable[[], None]:
    """``config``'s launcher for ``operands`` = (a, w, bias or None) into a fresh output poisoned with NaN,
    launched once; a ``SystemExit`` naming ``label`` unless its relative error against the fp32 ``ref`` is
    below 1e-2 (NaN fails too: a tile never written)."""
    import torch
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    a, w, bias = operands
    out = torch.full((a.shape[0], w.shape[0]), float("nan"), device="cuda", dtype=a.dtype)
    launch = launcher(config, validate(a, w, bias=bias, out=out), out)
    launch()
    torch.cuda.synchronize()
    err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
    if not err < 1e-2:
        raise SystemExit(f"{label}: relative error {err} against torch")
    return launch
