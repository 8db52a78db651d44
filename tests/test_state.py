"""Ring arithmetic: one implementation, checked against a brute-force walk of the ring."""

import pytest

from pipes import CONSUMER_START_PHASE, PRODUCER_START_PHASE, PipelineState, advance_position, position, stage_index


def walk(stages, start_phase, steps):
    """Reference: step one slot at a time, flipping the phase at each wrap."""
    index, phase = 0, start_phase
    for _ in range(steps):
        index += 1
        if index == stages:
            index, phase = 0, phase ^ 1
    return index, phase


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("start", [PRODUCER_START_PHASE, CONSUMER_START_PHASE])
def test_position_matches_a_walk_of_the_ring(stages, start):
    for iteration in range(4 * stages + 3):
        assert position(iteration, stages, start) == walk(stages, start, iteration)
        assert stage_index(iteration, stages) == walk(stages, start, iteration)[0]


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_advance_by_n_equals_n_single_steps(stages):
    for steps in range(1, 3 * stages + 2):
        for start_index in range(stages):
            one_by_one = (start_index, 1)
            for _ in range(steps):
                one_by_one = advance_position(*one_by_one, 1, stages)
            assert advance_position(start_index, 1, steps, stages) == one_by_one


def test_producer_starts_at_phase_one_and_consumer_at_zero():
    producer, consumer = PipelineState.producer_start(3), PipelineState.consumer_start(3)
    assert (producer.index, producer.phase, producer.count) == (0, 1, 0)
    assert (consumer.index, consumer.phase, consumer.count) == (0, 0, 0)


def test_state_advance_tracks_count_and_keeps_phase_binary():
    state = PipelineState.consumer_start(2)
    seen = []
    for _ in range(6):
        seen.append((state.index, state.phase))
        state.advance()
    assert seen == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 0), (1, 0)]
    assert state.count == 6
    state.advance(5)
    assert (state.index, state.phase, state.count) == (1, 1, 11)


def test_at_reconstructs_a_cursor_from_its_iteration():
    state = PipelineState.producer_start(3)
    for _ in range(8):
        state.advance()
    assert state == PipelineState.at(8, 3, PRODUCER_START_PHASE)


def test_clone_is_independent():
    state = PipelineState.producer_start(2)
    copy = state.clone()
    state.advance()
    assert copy.count == 0 and state.count == 1


def test_advance_rejects_non_positive_steps():
    with pytest.raises(ValueError, match="steps=0"):
        PipelineState.producer_start(2).advance(0)


def test_stages_must_be_positive():
    with pytest.raises(ValueError, match="stages = 0"):
        PipelineState(0)


class Traced(int):
    """Stands in for a DSL integer: the arithmetic must use only operators, never int() or branches."""

    def __bool__(self):
        raise TypeError("ring arithmetic branched on a traced value")

    def _wrap(op):
        return lambda self, other: Traced(op(int(self), int(other)))

    __add__ = _wrap(int.__add__)
    __radd__ = _wrap(int.__radd__)
    __mod__ = _wrap(int.__mod__)
    __floordiv__ = _wrap(int.__floordiv__)
    __and__ = _wrap(int.__and__)
    __xor__ = _wrap(int.__xor__)
    __rxor__ = _wrap(int.__rxor__)


def test_arithmetic_is_branch_free_so_it_traces_on_dsl_integers():
    state = PipelineState(3, Traced(2), Traced(1), Traced(5))
    state.advance(Traced(1))
    assert isinstance(state.index, Traced) and isinstance(state.phase, Traced)
    assert (int(state.index), int(state.phase), int(state.count)) == (0, 0, 6)
    index, phase = position(Traced(7), 3, 1)
    assert (int(index), int(phase)) == (1, 1) and isinstance(phase, Traced)
