"""pipes: reusable producer/consumer pipeline objects for CuTe DSL kernels, Ascend, and a CPU checker.

The core (this package) is backend-neutral and imports nothing heavy:

* :mod:`pipes.spec` — :class:`PipelineSpec`, :class:`Role`, :class:`ArrivalUnit`, :class:`Completion`
* :mod:`pipes.state` — :class:`PipelineState` and the ring arithmetic shared by every backend
* :mod:`pipes.participants` — :class:`Producer` / :class:`Consumer` handles over a backend's ops

Backends: :mod:`pipes.cute` (CuTe DSL, Hopper), :mod:`pipes.ascend` (set_flag/wait_flag),
:mod:`pipes.check` (CPU model checker).
"""

from .errors import PipesError, PipesPerformanceWarning, ProtocolError, SpecError
from .participants import Consumer, PipelineOps, Producer, acquire_every_slot
from .spec import MAX_ARRIVALS, ArrivalUnit, Completion, PipelineSpec, Role
from .state import (
    CONSUMER_START_PHASE,
    PRODUCER_START_PHASE,
    PipelineState,
    advance_position,
    position,
    stage_index,
)

#: Marks this distribution's package, as opposed to the deprecated standard-library module ``pipes``.
IS_PIPELINE_LIBRARY = True
__version__ = "0.1.0"

__all__ = [
    "CONSUMER_START_PHASE",
    "MAX_ARRIVALS",
    "PRODUCER_START_PHASE",
    "ArrivalUnit",
    "Completion",
    "Consumer",
    "PipelineOps",
    "PipelineSpec",
    "PipelineState",
    "PipesError",
    "PipesPerformanceWarning",
    "Producer",
    "ProtocolError",
    "Role",
    "SpecError",
    "acquire_every_slot",
    "advance_position",
    "position",
    "stage_index",
]
