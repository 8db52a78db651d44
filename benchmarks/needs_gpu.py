"""The GPU benchmarks' first step: torch with a CUDA GPU, or one line saying why not (exit status 0)."""

from __future__ import annotations

from typing import Any


def cuda_torch(script: str, checked_by: str = "") -> Any | None:
    """torch where it is installed and sees a CUDA GPU; else None, after one line saying that
    ``benchmarks/<script>`` needs one (and, in parentheses, ``checked_by``: what checks it on a CPU)."""
    try:
        import torch
    except ImportError:  # a CPU-only install has no torch
        torch = None
    if torch is None or not torch.cuda.is_available():
        print(f"no CUDA GPU: benchmarks/{script} needs one" + (f" ({checked_by})" if checked_by else ""))
        return None
    return torch
