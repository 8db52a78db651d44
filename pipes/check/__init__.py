"""pipes.check: a CPU model checker for pipeline protocols.

Write each agent (one unit of a role: a thread, warp or warpgroup) as an ordinary Python function that
uses the same :class:`pipes.Producer` / :class:`pipes.Consumer` handles as a kernel, over the model
backend, plus explicit data reads and writes; declare the pipelines; call :func:`check`::

    from pipes import PipelineSpec, Role
    from pipes.check import Agent, ModelPipeline, Protocol, check

    spec = PipelineSpec("data", 2, Role("load"), Role("math"))

    def producer(ctx):
        p = ctx.producer("data")
        for i in range(4):
            slot = p.acquire(); ctx.write("data", slot, i); p.commit()
        p.tail()

    def consumer(ctx):
        c = ctx.consumer("data")
        for i in range(4):
            slot = c.wait(); assert ctx.read("data", slot) == i; c.release()

    report = check(Protocol("demo", [Agent("load", producer), Agent("math", consumer)], [ModelPipeline(spec)]))
    assert report.ok, report

The checker explores every interleaving (state hashing, one move per synchronising operation) and
reports deadlocks, reads of uncommitted data, overwrites of unreleased slots, over-arrivals, phase
aliasing, lost counter signals and unbalanced exits (errors), and credits left at exit (a warning), each
with a numbered interleaving that :func:`replay` reproduces.
"""

from .barrier import BarrierState, FlagState
from .bridge import model_of, ordered_protocol, stream_protocol
from .comm import ModelCredits, ModelReadyFlags, ModelStepCounters, copy_stream, host_reader
from .context import Ctx
from .counter import CounterState
from .explore import check, replay, search
from .gather import ModelChunkGate, ModelTmaIssue, chunk_pusher, tma_unit
from .ordered import OrderedTurn
from .pipeline import ModelPipelineOps
from .protocol import (
    END_OF_STREAM,
    Agent,
    ModelBarrier,
    ModelCounter,
    ModelFlag,
    ModelOrder,
    ModelPipeline,
    Protocol,
)
from .report import Finding, FindingKind, Report, Severity
from .scope import HOST, Place, Scope

__all__ = [
    "model_of",
    "ordered_protocol",
    "stream_protocol",
    "END_OF_STREAM",
    "HOST",
    "Place",
    "Scope",
    "Agent",
    "ModelChunkGate",
    "ModelCredits",
    "ModelReadyFlags",
    "ModelStepCounters",
    "ModelTmaIssue",
    "chunk_pusher",
    "copy_stream",
    "host_reader",
    "tma_unit",
    "BarrierState",
    "CounterState",
    "Ctx",
    "Finding",
    "FindingKind",
    "FlagState",
    "ModelBarrier",
    "ModelCounter",
    "ModelFlag",
    "ModelOrder",
    "ModelPipeline",
    "ModelPipelineOps",
    "OrderedTurn",
    "Protocol",
    "Report",
    "Severity",
    "check",
    "replay",
    "search",
]
