"""``pipes.ascend``: the pipeline objects on Ascend ``set_flag``/``wait_flag`` event ids.

* :mod:`~pipes.ascend.pairs` — :class:`Pipe`, :class:`CoreType`, :class:`Space`, the legal flag pairs
* :mod:`~pipes.ascend.targets` — :class:`AscendTarget`: each generation's facts (pairs, in-order pipes, capacity)
* :mod:`~pipes.ascend.events` — :class:`EventIdAllocator` and the id rules (reservations, generations)
* :mod:`~pipes.ascend.pipeline` — :class:`FlagPipeline` (core ``PipelineOps`` over flags), priming/draining
* :mod:`~pipes.ascend.crosscore` — :class:`CrossCorePipeline` (cube ↔ vector through GM)
* :mod:`~pipes.ascend.emit` — TileLang-Ascend (real or stand-in ``T``) and AscendC text back-ends
* :mod:`~pipes.ascend.sim` — the CPU simulator that runs kernels and diagnoses their synchronization
"""

from .backend import FlagSink, KernelBuilder
from .crosscore import CrossCoreBinding, CrossCorePipeline, CrossCoreSide, cross_core_pipeline
from .events import EventIdAllocator, EventIdError, EventIdRules, EventIds, Generation, Keying
from .pairs import LEGAL_PAIRS, CoreType, Pipe, Space, check_pair, copy_route, legal_destinations
from .pipeline import FlagBinding, FlagPipeline, Lifecycle, flag_pipeline, primed, seat_handles, serial
from .sym import Sym, SymBuffer
from .targets import ASCEND_950, ATLAS_A2_A3, AscendTarget, derive_target

__all__ = [
    "ASCEND_950",
    "ATLAS_A2_A3",
    "LEGAL_PAIRS",
    "AscendTarget",
    "CoreType",
    "CrossCoreBinding",
    "CrossCorePipeline",
    "CrossCoreSide",
    "EventIdAllocator",
    "EventIdError",
    "EventIdRules",
    "EventIds",
    "FlagBinding",
    "FlagPipeline",
    "FlagSink",
    "Generation",
    "KernelBuilder",
    "Keying",
    "Lifecycle",
    "Pipe",
    "Space",
    "Sym",
    "SymBuffer",
    "check_pair",
    "copy_route",
    "cross_core_pipeline",
    "derive_target",
    "flag_pipeline",
    "legal_destinations",
    "primed",
    "seat_handles",
    "serial",
]
