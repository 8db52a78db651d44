"""Symmetry from structure: agents written as separate but identical functions are explored as one orbit."""

import functools

import pytest

from pipes import ArrivalUnit, Completion, PipelineSpec, Role
from pipes.check import END_OF_STREAM, Agent, ModelPipeline, Protocol, check
from pipes.check.catalogue import BAD, GOOD
from pipes.check.symmetry import classes_of

TILES = 4


def _spec(consumers: int = 2, stages: int = 2) -> PipelineSpec:
    return PipelineSpec(
        "out",
        stages,
        Role("epi", ArrivalUnit.ELECTED_PER_WARP),
        Role("comm", ArrivalUnit.ELECTED_PER_WARP, count=consumers),
        Completion.STORE_COMPLETE,
    )


def _epilogue(tiles: int):
    def epilogue(ctx):
        out = ctx.producer("out")
        for tile in range(tiles):
            slot = out.acquire()
            ctx.write("out", slot, f"C{tile}")
            ctx.fence_proxy_async()
            ctx.store("out", slot, ("C", tile))
            out.commit(tile)
        out.tail()

    return epilogue


def make_reader(tiles: int, wanted: list):
    """A communication warp: a new function per call, closing over a helper made per call and a list
    (unhashable: compared by value)."""

    def expect(tile, expected):
        assert tile == wanted[expected], f"got tile {tile!r}, expected {wanted[expected]}"

    def communicate(ctx):
        inbox = ctx.consumer("out")
        expected = 0
        while True:
            slot = inbox.wait()
            tile = ctx.read_meta("out", slot)
            if tile is END_OF_STREAM:
                inbox.release()
                break
            expect(tile, expected)
            assert ctx.read_global(("C", tile)) == f"C{tile}"
            inbox.release()
            expected += 1
        assert expected == tiles

    return communicate


def handoff(readers, tiles: int = TILES) -> Protocol:
    agents = [Agent("epilogue", _epilogue(tiles)), *(Agent(f"comm{i}", fn) for i, fn in enumerate(readers))]
    return Protocol("handoff", agents, [ModelPipeline(_spec(len(readers)), lag=1)])


def outcome(report) -> tuple:
    return report.ok, report.exhaustive, report.kinds()


def test_a_factory_called_per_agent_is_explored_like_one_shared_function():
    shared = make_reader(TILES, list(range(TILES)))
    one = check(handoff([shared, shared]))
    made = check(handoff([make_reader(TILES, list(range(TILES))) for _ in range(2)]))
    plain = check(handoff([make_reader(TILES, list(range(TILES))) for _ in range(2)]), symmetry=False)
    assert one.ok and one.exhaustive and one.symmetric == (("comm0", "comm1"),)
    assert made.symmetric == (("comm0", "comm1"),)
    assert (made.states, outcome(made)) == (one.states, outcome(one))
    assert outcome(plain) == outcome(made) and made.states < plain.states


def test_three_factory_agents_with_partials_and_defaults_form_one_class():
    def body(ctx, tiles, step=1):
        c = ctx.consumer("out")
        for _ in range(tiles + 1):
            c.wait()
            c.release()

    readers = [functools.partial(body, tiles=TILES, step=1) for _ in range(3)]
    protocol = handoff(readers)
    assert classes_of(protocol.agents) == [(1, 2, 3)]
    assert outcome(check(protocol)) == outcome(check(protocol, symmetry=False))


def test_agents_whose_closures_capture_different_values_are_not_merged():
    # The second reader expects the tiles in another order: the same code, different captured list.
    readers = [make_reader(TILES, list(range(TILES))), make_reader(TILES, [1, 0, 2, 3])]
    protocol = handoff(readers)
    assert classes_of(protocol.agents) == []
    reduced, plain = check(protocol), check(protocol, symmetry=False)
    assert not plain.ok and outcome(reduced) == outcome(plain) and reduced.states == plain.states


def test_equal_values_of_different_types_are_different_captures():
    def make(limit):
        def reader(ctx):
            c = ctx.consumer("out")
            for _ in range(TILES + 1):
                c.wait()
                c.release()
            assert str(limit) == "1"

        return reader

    protocol = handoff([make(1), make(True)])  # 1 == True, but str() tells them apart
    assert classes_of(protocol.agents) == []
    reduced, plain = check(protocol), check(protocol, symmetry=False)
    assert not plain.ok and outcome(reduced) == outcome(plain)


def test_a_captured_index_used_to_pick_a_slot_keeps_the_agents_apart():
    def make(index):
        def reader(ctx):
            c = ctx.consumer("out")
            for tile in range(TILES + 1):
                slot = c.wait()
                if tile == index:
                    assert ctx.read_meta("out", slot) == tile
                c.release()

        return reader

    protocol = handoff([make(0), make(1)])
    assert classes_of(protocol.agents) == []
    assert outcome(check(protocol)) == outcome(check(protocol, symmetry=False))


def test_bound_methods_of_different_instances_are_not_merged():
    class Reader:
        def __init__(self, tiles):
            self.tiles = tiles

        def run(self, ctx):
            c = ctx.consumer("out")
            for _ in range(self.tiles + 1):
                c.wait()
                c.release()

    same = Reader(TILES)
    assert classes_of(handoff([Reader(TILES).run, Reader(TILES).run]).agents) == []
    assert classes_of(handoff([same.run, same.run]).agents) == [(1, 2)]


def _first(ctx):
    inbox = ctx.consumer("out")
    expected = 0
    while True:
        slot = inbox.wait()
        tile = ctx.read_meta("out", slot)
        if tile is END_OF_STREAM:
            inbox.release()
            break
        assert tile == expected
        assert ctx.read_global(("C", tile)) == f"C{tile}"
        inbox.release()
        expected += 1


def _second(ctx):
    inbox = ctx.consumer("out")
    expected = 0
    while True:
        slot = inbox.wait()
        tile = ctx.read_meta("out", slot)
        if tile is END_OF_STREAM:
            inbox.release()
            break
        assert tile == expected
        assert ctx.read_global(("C", tile)) == f"C{tile}"
        inbox.release()
        expected += 1


def _different(ctx):
    inbox = ctx.consumer("out")
    expected = 0
    while True:
        slot = inbox.wait()
        tile = ctx.read_meta("out", slot)
        if tile is END_OF_STREAM:
            inbox.release()
            break
        assert tile == expected
        assert ctx.read_global(("C", tile)) == f"C{tile + 1}"
        inbox.release()
        expected += 1


def test_separately_defined_identical_functions_are_merged():
    assert _first.__code__ is not _second.__code__
    merged = check(handoff([_first, _second]))
    shared = check(handoff([_first, _first]))
    assert merged.symmetric == (("comm0", "comm1"),)
    assert (merged.states, outcome(merged)) == (shared.states, outcome(shared))
    assert merged.ok and merged.exhaustive


def test_separately_defined_different_functions_are_not_merged():
    protocol = handoff([_first, _different])
    assert classes_of(protocol.agents) == []
    assert outcome(check(protocol)) == outcome(check(protocol, symmetry=False))


def test_functions_that_look_at_their_own_name_are_compared_with_it():
    def one(ctx):
        c = ctx.consumer("out")
        for _ in range(TILES + 1):
            c.wait()
            c.release()
        assert one.__name__ == "one"

    def two(ctx):
        c = ctx.consumer("out")
        for _ in range(TILES + 1):
            c.wait()
            c.release()
        assert one.__name__ == "one"

    assert classes_of(handoff([one, two]).agents) == []


def test_agents_in_different_places_are_not_merged():
    agents = [
        Agent("epilogue", _epilogue(TILES)),
        Agent("comm0", _first),
        Agent("comm1", _second, cta=1),
    ]
    assert classes_of(agents) == []


@pytest.mark.parametrize("entry", [*GOOD, *BAD], ids=lambda e: e.name)
def test_every_catalogue_protocol_has_the_same_verdict_with_and_without_symmetry(entry):
    reduced = check(entry.build(), max_states=200_000)
    plain = check(entry.build(), symmetry=False, max_states=200_000)
    assert reduced.exhaustive and plain.exhaustive
    assert (reduced.ok, reduced.kinds()) == (plain.ok, plain.kinds())
    assert reduced.states <= plain.states
