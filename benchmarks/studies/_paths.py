"""Puts ``benchmarks/`` (the shared helpers and ``gemm.py``), ``examples/`` (``hopper_gemm``) and ``contrib/``
(``gemm_modes``) on
``sys.path`` for a study, run as ``python benchmarks/studies/<name>.py`` from anywhere or imported by the
tests: each study imports it first (``import _paths  # noqa: F401``)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1]

for _path in (
    BENCHMARKS.parent / "contrib",
    BENCHMARKS.parent / "examples",
    BENCHMARKS,
):  # benchmarks/ first, as it was for the scripts
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
