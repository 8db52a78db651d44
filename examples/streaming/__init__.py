"""Multi-stage TMA streaming for memory-bound kernels: RMSNorm and axpby on pipes pipelines.

Modules, one job each: :mod:`.plan` (geometry and budgets, pure Python), :mod:`.roles` (the pipelines
and the role layout), :mod:`.tiles` (TMA/shared-memory views), :mod:`.rmsnorm_kernel` and
:mod:`.axpby_kernel` (the CuTe kernels), :mod:`.build` (compile, report), :mod:`.api` (torch functions),
:mod:`.validate` (their input checks), :mod:`.prepared` / :mod:`.launch` / :mod:`.device` (the per-call host
path: remembered call signatures, ctypes argument packs, the device-runtime seam), :mod:`.hostcost` (that
path timed on a CPU), :mod:`.check` / :mod:`.bench` / :mod:`.timing` / :mod:`.reference` (GPU correctness
and measurement), :mod:`.cli`.
"""

from .api import axpby, bind_axpby, bind_rmsnorm, rmsnorm
from .plan import Op, Plan, Store, StreamConfig, make_plan, max_n

__all__ = [
    "Op",
    "Plan",
    "Store",
    "StreamConfig",
    "axpby",
    "bind_axpby",
    "bind_rmsnorm",
    "make_plan",
    "max_n",
    "rmsnorm",
]
