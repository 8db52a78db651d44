"""Shared test set-up: hardware markers that skip cleanly, and the compile target for CuTe DSL.

``gpu`` tests need an NVIDIA Hopper GPU (compute capability 9.0); ``npu`` tests need an Ascend NPU with
torch_npu and tilelang-ascend; ``blackwell`` tests need an NVIDIA Blackwell GPU (compute capability 10.0,
sm_100a). Elsewhere they are skipped with a one-line reason and every CPU test
still runs.
"""

from __future__ import annotations

import functools
import os
import tempfile

import pytest


def _require_the_library() -> None:
    """Fail at once, naming the fix, when ``pipes`` is the deprecated stdlib module (an uninstalled checkout
    run as ``pytest`` rather than ``python -m pytest`` / ``PYTHONPATH=.``): not 500 confusing errors."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "_pipes_import_redirect.py"
    spec = importlib.util.spec_from_file_location("_pipes_import_redirect_check", path)
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    helper.require_pipes_library()


_require_the_library()

# CuTe DSL compiles without a GPU when told the target; it must be set before cutlass is imported.
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
# --keep-ptx writes files next to the working directory unless told otherwise: keep checkouts clean.
_dump = os.environ.get("CUTE_DSL_DUMP_DIR") or tempfile.mkdtemp(prefix="pipes-cute-dump-")
if _worker := os.environ.get("PYTEST_XDIST_WORKER"):
    # xdist's workers inherit the controller's environment: each gets a directory of its own, or one
    # worker reads the kept PTX of another's same-named kernel (compile artifacts can be file paths).
    _dump = os.path.join(_dump, _worker)
    os.makedirs(_dump, exist_ok=True)
os.environ["CUTE_DSL_DUMP_DIR"] = _dump


@functools.cache
def gpu_absent_reason(major_wanted: int, family: str) -> str | None:
    """None when GPU 0 has compute capability ``major_wanted``.x, else why not (one line)."""
    try:
        from cuda.bindings import runtime as cudart
    except Exception as exc:  # noqa: BLE001 - any import failure means no usable CUDA
        return f"no CUDA runtime bindings ({type(exc).__name__})"
    try:
        err, count = cudart.cudaGetDeviceCount()
        if int(err) != 0 or count == 0:
            return "no CUDA GPU visible"
        err, major = cudart.cudaDeviceGetAttribute(cudart.cudaDeviceAttr.cudaDevAttrComputeCapabilityMajor, 0)
        if int(err) != 0:
            return "cannot read the GPU's compute capability"
        if major != major_wanted:
            return f"GPU 0 has compute capability {major}.x, not {family} {major_wanted}.0"
    except Exception as exc:  # noqa: BLE001
        return f"CUDA unusable: {exc}".splitlines()[0]
    return None


def hopper_gpu_absent_reason() -> str | None:
    """None when a compute-capability-9.x GPU is visible, else why not (one line)."""
    return gpu_absent_reason(9, "Hopper")


def blackwell_gpu_absent_reason() -> str | None:
    """None when GPU 0 is a Blackwell data-center part (compute capability 10.x, sm_100a), else why not."""
    return gpu_absent_reason(10, "Blackwell")


@functools.cache
def npu_absent_reason() -> str | None:
    """None when torch_npu and tilelang (Ascend) import and an NPU is visible, else why not."""
    try:
        import torch_npu  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - torch_npu raises various errors without CANN
        return f"torch_npu unavailable ({type(exc).__name__})"
    try:
        import tilelang  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f"tilelang-ascend unavailable ({type(exc).__name__})"
    import torch

    if not getattr(torch, "npu", None) or not torch.npu.is_available():
        return "no Ascend NPU visible"
    return None


#: Markers of tests that use a device: under pytest-xdist's ``--dist loadgroup`` they share one worker, so
#: two of them never run on one GPU or NPU at once (timings, ports, memory).
DEVICE_MARKERS = ("gpu", "blackwell", "npu")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The slow tests first: pytest-xdist hands out work in collection order, and a minute-long test
    # started last keeps one worker busy after the other has finished (the suite runs on two cores in CI).
    items.sort(key=lambda item: "slow" not in item.keywords)
    for item in items:
        if any(marker in item.keywords for marker in DEVICE_MARKERS):
            item.add_marker(pytest.mark.xdist_group("device"))
        if "gpu" in item.keywords and (reason := hopper_gpu_absent_reason()):
            item.add_marker(pytest.mark.skip(reason=f"gpu: {reason}"))
        if "blackwell" in item.keywords and (reason := blackwell_gpu_absent_reason()):
            item.add_marker(pytest.mark.skip(reason=f"blackwell: {reason}"))
        if "npu" in item.keywords and (reason := npu_absent_reason()):
            item.add_marker(pytest.mark.skip(reason=f"npu: {reason}"))


@pytest.fixture
def torch_without_gpu():
    """torch, or None where it is not installed (a CPU-only install); skips the test where torch sees a
    CUDA GPU, since the code under test would then run on it instead of taking its no-GPU path."""
    try:
        import torch
    except ImportError:
        return None
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the code under test runs on it instead")
    return torch
