"""torch, imported on demand: ``import pipes`` and ``import pipes.comm`` work without it."""

from __future__ import annotations

from typing import Any


def require_torch(what: str) -> Any:
    """``torch``, or ``ImportError`` saying that ``what`` needs it and how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            f"{what} needs torch (its buffers are torch tensors): pip install 'pipes-cute[torch]'"
        ) from exc
    return torch
