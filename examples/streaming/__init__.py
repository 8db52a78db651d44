"""Multi-stage TMA streaming for memory-bound kernels: RMSNorm and axpby on pipes pipelines.

Modules, one job each: :mod:`.plan` (geometry and budgets, pure Python), :mod:`.roles` (the pipelines
and the role layout), :mod:`.tiles` (TMA/shared-memory views), :mod:`.rmsnorm_kernel` and
:mod:`.axpby_kernel` (the CuTe kernels), :mod:`.build` (compile, report), :mod:`.api` (torch functions),
:mod:`.check` / :mod:`.bench` / :mod:`.timing` / :mod:`.reference` (GPU correctness and measurement),
:mod:`.cli`.
"""

from .api import axpby, rmsnorm
from .plan import Op, Plan, Store, StreamConfig, make_plan, max_n

__all__ = ["Op", "Plan", "Store", "StreamConfig", "axpby", "make_plan", "max_n", "rmsnorm"]
