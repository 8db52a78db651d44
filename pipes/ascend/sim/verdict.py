"""What a finished or stuck run means: hazard messages, the checks at kernel exit, deadlock analysis.

Functions over a :class:`~pipes.ascend.sim.machine_state.MachineState`, kept apart from the execution loop so each
diagnosis reads as one piece of text-building code.
"""

from __future__ import annotations

from .buffers import View
from .diagnosis import Kind, Severity
from .machine_state import Access, MachineState, PipeRun
from .program import Instr, Op


def report_hazard(m: MachineState, instr: Instr, run: PipeRun, view: View, write: bool, rec: Access) -> None:
    other = m.pipes[rec.agent]
    if not m.sampled:
        # Every schedule (prove): no timing to speak of, only what the schedule shows.
        status = f"in the schedule below, no flag or barrier orders {m.where(rec.instr)} before {m.where(instr)}"
    elif other.finished < rec.counter:
        status = "still in flight"
    else:
        status = "in this sampled run it had finished, but only by luck of timing"
    label = view.label
    if rec.instr.core != instr.core:
        what = "writes" if write else "reads"
        their = "write" if rec.write else "read"
        message = (
            f"{run.name} {what} {label} ({m.where(instr)}) while {other.name}'s {their} of it "
            f"({m.where(rec.instr)}) is not ordered before it by any cross-core flag ({status})"
        )
        kind = "cross-core"
    elif rec.instr.seq < instr.seq:
        if rec.write and not write:
            kind, message = "RAW", f"{run.name} reads {label} before {other.name} finished writing it"
        elif write and not rec.write:
            kind, message = "WAR", f"{run.name} overwrites {label} while {other.name} may still be reading it"
        else:
            kind, message = "WAW", f"{run.name} overwrites {label} before {other.name}'s earlier write finished"
        message += f": {m.where(instr)} is not ordered after {m.where(rec.instr)} ({status})"
    else:
        if rec.write and not write:
            kind = "WAR"
            message = (
                f"{other.name} overwrote {label} ({m.where(rec.instr)}) before {run.name} read the "
                f"previous contents ({m.where(instr)}): the read sees data from a later step"
            )
        elif write and not rec.write:
            kind = "RAW"
            message = (
                f"{other.name} read {label} ({m.where(rec.instr)}) before {run.name} wrote it "
                f"({m.where(instr)}, earlier in program order): it read stale data"
            )
        else:
            kind = "WAW"
            message = (
                f"{other.name}'s write of {label} ({m.where(rec.instr)}) ran before {run.name}'s "
                f"earlier-in-program-order write ({m.where(instr)})"
            )
    same_pipe = rec.agent == run.agent
    hint = f" — same pipe: add pipe_barrier(PIPE_{run.pipe.name})" if same_pipe else " — a flag is missing or misplaced"
    m.report(
        Kind.DATA_HAZARD,
        f"{kind} on {view.tensor.name}: {message}{hint}",
        ("hazard", kind, view.tensor.name, run.name, other.name),
        finding=hazard_name(kind, write),
    )


def hazard_name(kind: str, write: bool) -> str:
    """A data hazard's finding-kind name (:data:`.diagnosis.FINDING_NAMES`): ``READ_UNCOMMITTED`` for a read not
    ordered after a write (RAW in program order; across cores, the access found second is a read),
    ``OVERWRITE_UNRELEASED`` for a write not ordered after an earlier access (WAR, WAW; across cores, a write)."""
    if kind == "cross-core":
        return "OVERWRITE_UNRELEASED" if write else "READ_UNCOMMITTED"
    return "READ_UNCOMMITTED" if kind == "RAW" else "OVERWRITE_UNRELEASED"


def count_flag(m: MachineState, key: tuple) -> tuple[int, int]:
    sets = waits = 0
    for program in m.sim.programs:
        for instr in program.instrs:
            if instr.op in (Op.SET, Op.WAIT) and m.flag_key(instr.core, instr.src, instr.dst, instr.event_id) == key:
                sets += instr.op is Op.SET
                waits += instr.op is Op.WAIT
    return sets, waits


def check_exit(m: MachineState) -> None:
    for key, flag in m.flags.items():
        if key in m.preset_keys:
            continue  # the framework pipe object waits on these at teardown: they must be set
        sets, waits = count_flag(m, key)
        m.report(
            Kind.FLAG_LEFT_SET,
            f"{flag.setter.text} by {m.where(flag.setter)} is still set when the kernel ends: the program has "
            f"{sets} set(s) and {waits} wait(s) of this flag on this path (a drain is missing); the next kernel "
            "on this core starts with it set.",
            ("left", key),
        )
    for key in m.preset_keys:
        if key not in m.flags:
            m.report(
                Kind.FRAMEWORK_FLAG,
                f"M→MTE1 id {key[-1]} on {m.sim.programs[key[0]].name} was pre-set by the framework pipe "
                "object, consumed by the kernel and not set again: the framework's teardown wait on it hangs.",
                ("preset", key),
            )
    for core, flag_id, signals, partial in m.cross.left():
        name = m.sim.programs[core].name
        if partial:
            what = (
                f"{name} set cross-core flag id {flag_id} {len(signals)} time(s) more than the other vector cores "
                f"(the first from {m.where(signals[0][1])}), so the cube never counted those sets"
            )
        else:
            what = (
                f"cross-core flag id {flag_id} of {name} holds {len(signals)} untaken signal(s) at exit, the first "
                f"from {m.where(signals[0][1])}"
            )
        m.report(
            Kind.CREDITS_LEFT,
            f"{what}: a counted signal left at exit does not hang this kernel (typically a free-slot credit primed "
            "and never taken), so this is a warning; drain it if the next kernel on these cores uses the id",
            ("xleft", core, flag_id),
            severity=Severity.WARNING,
        )
    for expectation in m.sim.expectations if m.values else ():
        expectation.check(m.data[expectation.tensor.tid], m.found)


def explain_deadlock(m: MachineState) -> None:
    blocked = [p for p in m.pipes if p.head < len(p.queue)]
    lines, edges, signature = [], {}, []
    for run in blocked:
        instr = run.queue[run.head]
        signature.append((run.name, instr.text))
        if instr.fences_before > len(m.fence_clocks[instr.core]):
            fence = pending_fence(m, instr.core)
            what = "pipe_barrier(PIPE_ALL)" if fence.op is Op.BARRIER_ALL else "cross-core wait"
            lines.append(
                f"  {run.name} cannot issue {instr.text}: every instruction after {m.where(fence)} "
                f"waits for that {what}"
            )
            edges[run.agent] = pipe_of(m, fence).agent
            continue
        setter = pending_setter(m, instr)
        if setter is None:
            report_unmatched(m, run, instr)
            lines.append(
                f"  {run.name} waits at {m.where(instr)}: no matching set remains in any queue{lost_signals(m, instr)}"
            )
            continue
        holder = pipe_of(m, setter)
        ahead = holder.queue[holder.head]
        lines.append(
            f"  {run.name} waits at {m.where(instr)}; its set is {m.where(setter)}, queued on "
            f"{holder.name} behind {m.where(ahead) if ahead is not setter else 'nothing (it is next)'}"
        )
        edges[run.agent] = holder.agent
    cycle = wait_cycle(edges)
    text = f"no pipe can make progress after {m.steps} steps:\n" + "\n".join(lines)
    if cycle:
        text += "\n  wait cycle: " + " → ".join(m.pipes[a].name for a in cycle)
    m.report(Kind.DEADLOCK, text, ("deadlock", tuple(signature)))


def pipe_of(m: MachineState, instr: Instr) -> PipeRun:
    return next(p for p in m.pipes if p.core == instr.core and p.pipe is instr.pipe)


def pending_fence(m: MachineState, core: int) -> Instr:
    index = len(m.fence_clocks[core])
    return [i for i in m.sim.programs[core].instrs if i.fence][index]


def pending_setter(m: MachineState, instr: Instr) -> Instr | None:
    """The first queued instruction that would satisfy the wait ``instr``, if any remains."""
    if instr.op is Op.WAIT:
        key = m.flag_key(instr.core, instr.src, instr.dst, instr.event_id)
        matches = lambda o: o.op is Op.SET and m.flag_key(o.core, o.src, o.dst, o.event_id) == key  # noqa: E731
    else:
        core_type = m.sim.programs[instr.core].core
        matches = lambda o: (  # noqa: E731
            o.op is Op.XSET and o.event_id == instr.event_id and m.sim.programs[o.core].core is not core_type
        )
    for run in m.pipes:
        for other in run.queue[run.head :]:
            if matches(other):
                return other
    return None


def lost_signals(m: MachineState, instr: Instr) -> str:
    """Why fewer signals arrived than the program sets: sets that merged (double sets) or were dropped."""
    if instr.op is Op.WAIT:
        key = m.flag_key(instr.core, instr.src, instr.dst, instr.event_id)
        merged = m.merged.get(key, [])
        if not merged:
            return ""
        first, onto = merged[0]
        into = "the framework's pre-set" if onto is None else m.where(onto)
        more = f" (and {len(merged) - 1} more)" if len(merged) > 1 else ""
        return (
            f"; {len(merged)} set(s) merged into one still pending — {m.where(first)} set it while {into} had not "
            f"been waited for{more} — so {len(merged)} signal(s) fewer arrived than were set"
        )
    dropped = m.cross.dropped_toward(instr.core, instr.event_id)
    if not dropped:
        return ""
    more = f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""
    return (
        f"; {len(dropped)} set(s) of this id were lost because the counter was full — {m.where(dropped[0].instr)} "
        f"found {dropped[0].held} untaken{more}"
    )


def report_unmatched(m: MachineState, run: PipeRun, instr: Instr) -> None:
    if instr.op is Op.WAIT:
        key = m.flag_key(instr.core, instr.src, instr.dst, instr.event_id)
        sets, waits = count_flag(m, key)
        preset = " plus 1 framework pre-set" if key in m.preset_keys else ""
        detail = f"the program has {sets} set(s){preset} and {waits} wait(s) of this flag"
    else:
        detail = "no cross-core set of this id remains on the other core type"
    detail += lost_signals(m, instr)
    m.report(
        Kind.UNMATCHED_WAIT,
        f"{m.where(instr)} waits for a signal that never comes: {detail} (an extra drain, a missing prime, "
        "or a set with the wrong id)",
        ("unmatched", run.name, instr.text),
    )


def wait_cycle(edges: dict[int, int]) -> list[int]:
    for start in edges:
        path, node = [], start
        while node in edges and node not in path:
            path.append(node)
            node = edges[node]
        if node in path:
            return [*path[path.index(node) :], node]
    return []
