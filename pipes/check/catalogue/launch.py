"""Catalogue protocols across kernel launches: memory a previous kernel left (initial values), and a
dependent grid started early with programmatic dependent launch (PDL)."""

from __future__ import annotations

from ..context import Ctx
from ..protocol import Agent, Protocol
from ..report import FindingKind
from .entry import Entry


def previous_kernel_values(racy: bool = False) -> Protocol:
    """Two warps read the scale a previous kernel left in global memory (``Protocol(initial=...)``) — no
    hazard by itself. ``racy=True``: one warp also updates the scale for the next launch while the other
    may still be reading it, with nothing between them."""

    def reader(ctx: Ctx) -> None:
        assert ctx.read_global("scale") == 0.5

    def updater(ctx: Ctx) -> None:
        assert ctx.read_global("scale") == 0.5
        if racy:
            ctx.write_global("scale", 0.25)

    agents = [Agent("reader", reader), Agent("updater", updater)]
    return Protocol("previous_kernel_values" + ("_racy" if racy else ""), agents, initial={"scale": 0.5})


def dependent_launch(wait_first: bool = True, tiles: int = 2) -> Protocol:
    """A producer kernel writes activations and triggers its dependents early
    (``griddepcontrol.launch_dependents``); the dependent kernel (grid 1) runs its prologue, then
    ``griddepcontrol.wait`` before reading them. ``wait_first=False``: it reads before the wait."""

    def producer(ctx: Ctx) -> None:
        ctx.launch_dependents()  # the dependent may launch now; its reads still wait for our completion
        for tile in range(tiles):
            ctx.write_global(("act", tile), tile)

    def dependent(ctx: Ctx) -> None:
        ctx.write_global("prologue", "weights staged")  # overlaps the producer's tail
        if wait_first:
            ctx.grid_dependency_wait()
        for tile in range(tiles):
            assert ctx.read_global(("act", tile)) == tile

    agents = [Agent("producer", producer), Agent("dependent", dependent, grid=1)]
    return Protocol("dependent_launch" + ("" if wait_first else "_reads_early"), agents)


GOOD = [
    Entry("previous_kernel_values", "reads of what a previous kernel left are no hazard", previous_kernel_values),
    Entry("dependent_launch", "PDL: the dependent grid reads after griddepcontrol.wait", dependent_launch),
]

BAD = [
    Entry(
        "previous_kernel_values_racy",
        "a warp updates the previous kernel's value while another may still read it",
        lambda: previous_kernel_values(racy=True),
        FindingKind.OVERWRITE_UNRELEASED,
        ("global['scale']",),
        (FindingKind.READ_UNCOMMITTED,),
        twin="previous_kernel_values",
    ),
    Entry(
        "dependent_launch_reads_early",
        "PDL: the dependent grid reads the producer's output before griddepcontrol.wait",
        lambda: dependent_launch(wait_first=False),
        FindingKind.READ_UNCOMMITTED,
        ("dependent reads global[('act', 0)]",),
        twin="dependent_launch",
    ),
]
