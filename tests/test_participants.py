"""Producer/Consumer handles: cursors, call order and the generic tail, over a recording backend."""

from pipes import Completion, Consumer, PipelineOps, PipelineSpec, PipelineState, Producer, Role, acquire_every_slot


class RecordingOps:
    """A backend that records the explicit-state calls the handles make."""

    def __init__(self, stages=2):
        self.spec = PipelineSpec("p", stages, Role("prod"), Role("cons"), Completion.ARRIVAL)
        self.calls = []

    def make_state(self, start_phase):
        return PipelineState(self.spec.stages, 0, start_phase, 0)

    def _log(self, name, state, *extra):
        self.calls.append((name, state.index, state.phase, state.count, *extra))

    def producer_acquire(self, state, token=None):
        self._log("producer_acquire", state, token)

    def producer_try_acquire(self, state):
        self._log("producer_try_acquire", state)
        return True

    def producer_commit(self, state, *payload):
        self._log("producer_commit", state, payload)

    def producer_tail(self, state):
        acquire_every_slot(self, state)

    def consumer_wait(self, state, token=None):
        self._log("consumer_wait", state, token)

    def consumer_try_wait(self, state):
        self._log("consumer_try_wait", state)
        return False

    def consumer_release(self, state):
        self._log("consumer_release", state)


def test_recording_ops_satisfies_the_protocol():
    assert isinstance(RecordingOps(), PipelineOps)


def test_producer_acquires_ahead_and_commits_behind():
    ops = RecordingOps(stages=2)
    producer = Producer(ops)
    assert [producer.acquire() for _ in range(3)] == [0, 1, 0]
    assert producer.commit("tile0") == 0
    assert ops.calls == [
        ("producer_acquire", 0, 1, 0, None),
        ("producer_acquire", 1, 1, 1, None),
        ("producer_acquire", 0, 0, 2, None),
        ("producer_commit", 0, 1, 0, ("tile0",)),
    ]


def test_consumer_waits_at_phase_zero_and_releases_in_order():
    ops = RecordingOps(stages=2)
    consumer = Consumer(ops)
    for _ in range(3):
        consumer.wait()
        consumer.release()
    waits = [c[1:4] for c in ops.calls if c[0] == "consumer_wait"]
    releases = [c[1:4] for c in ops.calls if c[0] == "consumer_release"]
    assert waits == releases == [(0, 0, 0), (1, 0, 1), (0, 1, 2)]


def test_try_tokens_are_passed_through_without_advancing():
    ops = RecordingOps()
    producer, consumer = Producer(ops), Consumer(ops)
    token = producer.try_acquire()
    producer.acquire(token)
    assert ops.calls[0] == ("producer_try_acquire", 0, 1, 0)
    assert ops.calls[1] == ("producer_acquire", 0, 1, 0, True)
    token = consumer.try_wait()
    consumer.wait(token)
    assert ops.calls[-1] == ("consumer_wait", 0, 0, 0, False)


def test_tail_acquires_every_slot_from_the_acquire_cursor():
    ops = RecordingOps(stages=3)
    producer = Producer(ops)
    for _ in range(4):
        producer.acquire()
        producer.commit()
    ops.calls.clear()
    producer.tail()
    assert [c[:4] for c in ops.calls] == [
        ("producer_acquire", 1, 0, 4),
        ("producer_acquire", 2, 0, 5),
        ("producer_acquire", 0, 1, 6),
    ]


def test_handles_default_to_the_spec_roles():
    ops = RecordingOps()
    assert Producer(ops).role.name == "prod"
    assert Consumer(ops).role.name == "cons"


def test_consumer_skip_passes_over_the_other_warpgroups_slots():
    # Ping-pong: two consumers of one 3-slot ring take turns of 2 slots each; each skips the other's.
    ops = RecordingOps(stages=3)
    first, second = Consumer(ops), Consumer(ops)
    second.skip(2)
    for _ in range(2):
        for c in (first, second):
            for _ in range(2):
                c.wait()
                c.release()
            c.skip(2)
    waits = [(index, phase, count) for name, index, phase, count, *_ in ops.calls if name == "consumer_wait"]
    seen = [(i, p) for i, p, _ in waits]
    # Every slot use 0..7 happens once, in order, with the phase the ring gives it.
    assert [count for *_, count in waits] == list(range(8))
    assert seen == [(k % 3, (k // 3) & 1) for k in range(8)]
    assert first.release_state == first.wait_state


def test_counts_follow_each_cursor_and_survive_skips():
    """producer.count / committed and consumer.count / released are the cursors' counts (cutlass state.count)."""
    ops = RecordingOps(stages=3)
    producer, consumer = Producer(ops), Consumer(ops)
    assert (producer.count, producer.committed, consumer.count, consumer.released) == (0, 0, 0, 0)
    for k in range(5):
        assert producer.count == k
        producer.acquire()
    producer.commit()
    assert (producer.count, producer.committed) == (5, 1)
    first = consumer.count
    consumer.wait()
    consumer.wait()
    consumer.release()
    assert (consumer.count - first, consumer.released) == (2, 1)
    consumer.release()
    consumer.skip(4)
    assert (consumer.count, consumer.released) == (6, 6)
    # the count is the one the core arithmetic carries: index and phase agree with it
    assert consumer.wait_state == PipelineState.at(6, 3, 0)
