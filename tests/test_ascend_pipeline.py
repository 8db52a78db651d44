"""FlagPipeline / CrossCorePipeline: the op → flag mapping through the core handles, priming and
draining, same-pipe barriers, lifecycle errors, and stage indices as traced expressions."""

from __future__ import annotations

import pytest

from pipes import Completion, Consumer, PipelineOps, PipelineSpec, Producer, ProtocolError, Role, SpecError
from pipes.ascend import (
    CoreType,
    EventIdAllocator,
    EventIdRules,
    FlagBinding,
    FlagPipeline,
    Pipe,
    Sym,
    cross_core_pipeline,
    flag_pipeline,
    primed,
    serial,
)

P = Pipe


class Recorder:
    """A FlagSink that keeps what it is asked to emit."""

    def __init__(self, core: CoreType = CoreType.AIC) -> None:
        self.core = core
        self.calls: list[tuple] = []

    def set_flag(self, src, dst, event_id):
        self.calls.append(("set", src.name, dst.name, event_id))

    def wait_flag(self, src, dst, event_id):
        self.calls.append(("wait", src.name, dst.name, event_id))

    def pipe_barrier(self, pipe):
        self.calls.append(("barrier", pipe.name))

    def set_cross_flag(self, pipe, flag_id, mode=2):
        self.calls.append(("xset", pipe.name, flag_id))

    def wait_cross_flag(self, pipe, flag_id):
        self.calls.append(("xwait", pipe.name, flag_id))

    def constant(self, name, value):
        return value

    def loop(self, count, body):
        for i in range(count):
            body(i)


def _ids() -> EventIdAllocator:
    return EventIdAllocator(EventIdRules(framework_preset=False))


def test_mapping_of_each_operation() -> None:
    sink = Recorder()
    pipe = flag_pipeline(sink, "l0c", stages=2, producer="M", consumer="FIX", ids=_ids())
    assert isinstance(pipe, PipelineOps)
    producer, consumer = pipe.producer(), pipe.consumer()
    assert isinstance(producer, Producer) and isinstance(consumer, Consumer)
    pipe.prime()
    assert sink.calls == [("set", "FIX", "M", 0), ("set", "FIX", "M", 1)]
    sink.calls.clear()
    assert producer.acquire() == 0
    assert producer.commit() == 0
    assert consumer.wait() == 0
    assert consumer.release() == 0
    assert producer.acquire() == 1
    assert sink.calls == [
        ("wait", "FIX", "M", 0),  # acquire: the producer pipe M waits for the consumer's release
        ("set", "M", "FIX", 0),  # commit
        ("wait", "M", "FIX", 0),  # wait: the consumer pipe FIX waits for the commit
        ("set", "FIX", "M", 0),  # release
        ("wait", "FIX", "M", 1),
    ]
    sink.calls.clear()
    producer.commit()
    consumer.wait()
    consumer.release()
    producer.tail()  # drains
    assert sink.calls[-2:] == [("wait", "FIX", "M", 0), ("wait", "FIX", "M", 1)]


def test_with_block_primes_and_drains_and_frees_ids() -> None:
    sink, ids = Recorder(), _ids()
    pipe = flag_pipeline(sink, "k", stages=3, producer=P.MTE2, consumer=P.MTE1, ids=ids)
    assert pipe.event_ids.ids == (0, 1, 2)
    with pipe:
        pass
    assert sink.calls == [("set", "MTE1", "MTE2", i) for i in range(3)] + [
        ("wait", "MTE1", "MTE2", i) for i in range(3)
    ]
    again = flag_pipeline(sink, "k2", stages=3, producer=P.MTE2, consumer=P.MTE1, ids=ids)
    assert again.event_ids.ids == (0, 1, 2)  # freed at drain


def test_failed_body_frees_ids_without_emitting_a_drain() -> None:
    sink, ids = Recorder(), _ids()
    pipe = flag_pipeline(sink, "k", stages=2, producer=P.MTE2, consumer=P.MTE1, ids=ids)
    with pytest.raises(RuntimeError), pipe:
        raise RuntimeError("kernel body failed")
    assert all(call[0] == "set" for call in sink.calls)
    assert flag_pipeline(sink, "k2", stages=2, producer=P.MTE2, consumer=P.MTE1, ids=ids).event_ids.ids == (0, 1)


def test_lifecycle_is_enforced() -> None:
    pipe = flag_pipeline(Recorder(), "l0", stages=2, producer="MTE1", consumer="M", ids=_ids())
    producer = pipe.producer()
    with pytest.raises(ProtocolError, match="acquire needs the pipeline primed, but it is not primed yet"):
        producer.acquire()
    pipe.prime()
    with pytest.raises(ProtocolError, match="prime needs the pipeline not primed yet"):
        pipe.prime()
    pipe.drain()
    with pytest.raises(ProtocolError, match="drain needs the pipeline primed, but it is drained"):
        pipe.drain()


def test_illegal_pair_is_rejected_at_creation_with_legal_destinations() -> None:
    legal = r"FIX→MTE2 is not a flag pair on the AIC core of Atlas A2; FIX may signal \{MTE1, M\}"
    with pytest.raises(SpecError, match=legal):
        flag_pipeline(Recorder(), "bad", stages=2, producer="FIX", consumer="MTE2", ids=_ids())
    with pytest.raises(SpecError, match="producer pipe = V is invalid on the AIC core"):
        flag_pipeline(Recorder(), "bad", stages=2, producer="V", consumer="MTE3", ids=_ids())


def test_spec_must_use_flag_completion() -> None:
    spec = PipelineSpec("x", 2, Role("mte2"), Role("v"), Completion.ARRIVAL)
    with pytest.raises(SpecError, match="spec.completion = ARRIVAL is invalid: allowed FLAG"):
        FlagPipeline(spec, sink=Recorder(CoreType.AIV), binding=FlagBinding(CoreType.AIV, P.MTE2, P.V), ids=_ids())


def test_same_pipe_becomes_pipe_barrier_without_ids() -> None:
    sink = Recorder(CoreType.AIV)
    pipe = flag_pipeline(sink, "vv", stages=2, producer="V", consumer="V", ids=None)
    assert pipe.event_ids is None
    producer, consumer = pipe.producer(), pipe.consumer()
    with pipe:
        producer.acquire()
        producer.commit()
        consumer.wait()
        consumer.release()
    assert sink.calls == [("barrier", "V"), ("barrier", "V")]


def test_stage_ids_are_expressions_of_a_traced_loop_variable() -> None:
    sink = Recorder()
    ids = _ids()
    k_l1 = flag_pipeline(sink, "k_l1", stages=1, producer="MTE2", consumer="MTE1", ids=ids)
    l0ab = flag_pipeline(sink, "l0ab", stages=2, producer="MTE1", consumer="M", ids=ids)
    fill, load = l0ab.producer(), k_l1.producer()
    with primed(k_l1, l0ab):
        sink.calls.clear()
        i = Sym("i")
        for pipe in (k_l1, l0ab):
            pipe.seat(i)
        assert str(fill.acquire()) == "i % 2"
        load.acquire()
        fill.commit()
    waits = sink.calls[:2]
    assert [str(c[3]) for c in waits] == ["1 + i % 2", "0"]  # one-slot ring: a constant id
    assert str(sink.calls[2][3]) == "1 + i % 2"


def test_serial_seats_pipelines_at_each_python_iteration() -> None:
    sink = Recorder()
    pipe = flag_pipeline(sink, "l0c", stages=3, producer="M", consumer="FIX", ids=_ids())
    prod, cons = pipe.producer(), pipe.consumer()

    def body(i):
        prod.acquire()
        prod.commit()
        cons.wait()
        cons.release()

    with pipe:
        serial(sink, 5, body, pipe)
    ids = [c[3] for c in sink.calls if c[:3] == ("wait", "FIX", "M")]
    assert ids == [0, 1, 2, 0, 1, 0, 1, 2]  # five acquires, then the drain of all three slots


def test_cross_core_mapping_and_sides() -> None:
    ids = _ids()
    scores = cross_core_pipeline("scores", stages=2, producer=("AIC", "FIX"), consumer=("AIV", "MTE2"), ids=ids)
    assert scores.full_ids.ids == (0, 1) and scores.empty_ids.ids == (2, 3)
    cube, vec = Recorder(CoreType.AIC), Recorder(CoreType.AIV)
    producer_side, consumer_side = scores.producer_side(cube), scores.consumer_side(vec)
    publish, take = producer_side.producer(), consumer_side.consumer()
    with pytest.raises(ProtocolError, match="wait needs the side primed"):
        take.wait()
    with producer_side, consumer_side:
        publish.acquire()
        publish.commit()
        take.wait()
        take.release()
    assert vec.calls == [("xset", "MTE2", 2), ("xset", "MTE2", 3), ("xwait", "MTE2", 0), ("xset", "MTE2", 2)]
    assert cube.calls == [("xwait", "FIX", 2), ("xset", "FIX", 0), ("xwait", "FIX", 2), ("xwait", "FIX", 3)]
    assert ids.allocate_cross("after", 4, "full").ids == (0, 1, 2, 3)  # freed by the producer's drain
    with pytest.raises(SpecError, match="builder core = AIV is invalid: allowed AIC"):
        scores.producer_side(vec)
    with pytest.raises(SpecError, match="joins AIC and AIV"):
        cross_core_pipeline("x", stages=1, producer=("AIV", "MTE3"), consumer=("AIV", "MTE2"), ids=ids)
