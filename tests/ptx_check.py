"""A small PTX control-flow checker for tests: "on every path to X, the last Y was Z".

``kernel_body(ptx)`` returns one kernel's instructions (inline-asm blocks collapsed to one pseudo
instruction, since their local labels are not kernel labels). ``path_states`` runs a forward
may-analysis over the basic blocks: each instruction sees the *set* of abstract states that some
path from the kernel entry can bring it. Tests use it to prove orderings such as "every
``mbarrier.arrive`` follows a non-``.read`` ``wait_group`` on all paths".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

LABEL = re.compile(r"^(\$?[A-Za-z_][\w$]*):$")
BRANCH = re.compile(r"^(@!?%p\w+\s+)?bra(\.uni)?\s+(\$?[\w$]+);")


def kernel_body(ptx: str, entry_index: int = 0) -> list[str]:
    """Instructions of the ``entry_index``-th ``.entry`` (labels kept, comments and decls dropped)."""
    starts = [m.start() for m in re.finditer(r"\.entry\s", ptx)]
    if not starts:
        raise ValueError("no .entry in PTX")
    text = ptx[starts[entry_index] :]
    text = text[text.index("{") + 1 :]
    out: list[str] = []
    depth = 1
    asm: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("// begin inline asm"):
            asm = []
            continue
        if line.startswith("// end inline asm"):
            out.append("asm{ " + " ".join(asm or []) + " }")
            asm = None
            continue
        if asm is not None:
            asm.append(line)
            continue
        if not line or line.startswith("//") or line.startswith("."):
            continue
        if line == "{":
            depth += 1
            continue
        if line == "}":
            depth -= 1
            if depth == 0:
                break
            continue
        out.append(line)
    return out


@dataclass
class Block:
    label: str | None
    instrs: list[str] = field(default_factory=list)
    succs: list[int] = field(default_factory=list)


def basic_blocks(instrs: list[str]) -> list[Block]:
    blocks: list[Block] = [Block(None)]
    for ins in instrs:
        m = LABEL.match(ins)
        if m:
            blocks.append(Block(m.group(1)))
            continue
        blocks[-1].instrs.append(ins)
        if BRANCH.match(ins) or ins.startswith("ret") or ins.startswith("trap") or ins.startswith("exit"):
            blocks.append(Block(None))
    index = {b.label: i for i, b in enumerate(blocks) if b.label}
    for i, block in enumerate(blocks):
        last = block.instrs[-1] if block.instrs else ""
        m = BRANCH.match(last)
        if m:
            block.succs.append(index[m.group(3)])
            if m.group(1):  # conditional: may fall through
                block.succs.append(i + 1)
        elif last.startswith(("ret", "trap", "exit")):
            pass
        elif i + 1 < len(blocks):
            block.succs.append(i + 1)
    return blocks


State = Hashable


def path_states(
    instrs: list[str], transfer: Callable[[str, State], State], initial: State
) -> list[tuple[str, frozenset]]:
    """Each instruction with the set of states reaching it (before it executes)."""
    blocks = basic_blocks(instrs)
    incoming: list[set] = [set() for _ in blocks]
    incoming[0].add(initial)
    work = [0]
    while work:
        i = work.pop()
        states = set(incoming[i])
        for ins in blocks[i].instrs:
            states = {transfer(ins, s) for s in states}
        for j in blocks[i].succs:
            if not states <= incoming[j]:
                incoming[j] |= states
                work.append(j)
    result: list[tuple[str, frozenset]] = []
    for i, block in enumerate(blocks):
        states = set(incoming[i])
        for ins in block.instrs:
            result.append((ins, frozenset(states)))
            states = {transfer(ins, s) for s in states}
    return result


def loops(instrs: list[str]) -> list[list[str]]:
    """Instructions of each natural loop body found as a back edge (target label at or before source)."""
    blocks = basic_blocks(instrs)
    found = []
    for i, block in enumerate(blocks):
        for j in block.succs:
            if j <= i:
                body = [ins for b in blocks[j : i + 1] for ins in b.instrs]
                found.append(body)
    return found


def _flag_release_transfer(ins: str, state: str) -> str:
    if ins.startswith("st.global.v4"):
        return "dirty"  # a tile's data store
    if ins.startswith("fence.acq_rel."):
        return "fenced"
    if ins.startswith("bar.warp.sync") and state == "fenced":
        return "synced"
    return state


def unordered_flag_releases(ptx: str) -> list[str]:
    """The ``st.release`` flag stores that some path reaches without, after the warp's last 16-byte data
    store, a ``fence.acq_rel`` and then a ``bar.warp.sync`` (the publish of ``pipes.cute.comm.ReadyFlags``)."""
    states = path_states(kernel_body(ptx), _flag_release_transfer, "dirty")
    return [ins for ins, s in states if ins.startswith("st.release.") and s != {"synced"}]
