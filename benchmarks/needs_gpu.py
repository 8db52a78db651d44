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


def device_with_sms(torch: Any) -> tuple[str, int]:
    """The GPU's name with its SM count, as the tables' ``device:`` line shows it (``"NVIDIA H100 80GB
    HBM3 (132 SMs)"``), and that count, which picks the schedules."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return f"{torch.cuda.get_device_name()} ({sms} SMs)", sms
