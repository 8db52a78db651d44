"""One compile per GEMM configuration and problem in a test process.

Many CPU tests assert different facts (PTX, SASS, registers, spills) about the same kernel; compiling each
configuration once per process saves minutes of the suite. Only for the kernels as they are: a test that
compiles a variant under a patch (``gemm_ceiling``'s loads, ``gemm_epilogue``'s variants) calls
``gemm_modes.launch.compile_report`` itself, since this cache keys on the configuration and the problem,
not on the code.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def gemm_report(config: Any, problem: Any) -> Any:
    """``gemm_modes.launch.compile_report(config, problem)``, compiled once per process."""
    from gemm_modes.launch import compile_report

    return compile_report(config, problem)
