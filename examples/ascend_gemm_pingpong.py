"""The requested Ascend ping-pong (requests/ascend-pingpong.md), written with pipes objects.

Run: ``python examples/ascend_gemm_pingpong.py [--iters 64]``. It

1. declares the three pipelines hiding in the request (K tile GM→L1, L0A/L0B, L0C) plus Q's one-shot
   load, and shows which event ids the allocator gives them (and why the framework's pre-set M→MTE1
   ids do not leave room for them);
2. prints the generated TileLang-Ascend and AscendC code, and diffs the TileLang loop against the
   request's hand-written one;
3. runs the generated kernel in the simulator on random fp16 inputs under many schedules and checks
   it against numpy's matmul;
4. runs the user's hand-written schedule, verbatim, through the simulator with the usual ways of
   priming and draining it, and reports what the simulator finds;
5. shows the diagnosis of broken variants (an L0A/L0B slot released before the mma that reads it; a
   hard-coded release id) and of the cube→vector hand-off through GM with cross-core flags, including
   a producer that signals again before the vector cores took the previous signal.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import textwrap
import time

import ascend_handwritten
import numpy as np
from ascend_handwritten import SEQUENTIAL_IDS, VARIANTS, HandIds, handwritten_simulator

from pipes.ascend import EventIdAllocator, EventIdError, EventIdRules, Keying, Sym
from pipes.ascend.emit import AscendCBuilder, StandInT, TileLangBuilder
from pipes.ascend.kernels.attention import AttentionBug, attention_simulator
from pipes.ascend.kernels.pingpong import PingPongBug, pingpong_gemm, pingpong_simulator, symbolic_tiles

RULES = EventIdRules(framework_preset=False)


def section(title: str) -> None:
    print(f"\n{'=' * 100}\n{title}\n{'=' * 100}")


def _first_lines(message: str) -> str:
    lines = message.splitlines()
    cycle = [line.strip() for line in lines if line.strip().startswith("wait cycle")]
    return "; ".join([lines[0].rstrip(":"), *cycle])


def summary(report, limit: int = 6, width: int = 400) -> str:
    """Errors first, one line each (the first line of the message, and a deadlock's wait cycle)."""
    if not len(report.diagnoses):
        return f"  clean: no problems in {len(report.runs)} schedule(s)"
    ordered = sorted(report.diagnoses, key=lambda d: d.severity.value != "error")
    lines = []
    for i, d in enumerate(ordered):
        if i == limit:
            lines.append(f"  … {len(ordered) - limit} more")
            break
        text = _first_lines(d.message)
        text = text if len(text) <= width else text[: width - 1] + "…"
        where = ", ".join(d.schedules[:3]) + (", …" if len(d.schedules) > 3 else "")
        lines.append(f"  {d.severity.value.upper()} {d.kind.value} [{where}]: {text}")
    return "\n".join(lines)


def verdict(report) -> str:
    """What a report found, in a few words per kind."""
    if not len(report.diagnoses):
        return "clean"
    counts: dict[str, int] = {}
    for d in report.diagnoses:
        key = d.kind.value + (" (warning)" if d.severity.value == "warning" else "")
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{kind} ×{n}" if n > 1 else kind for kind, n in counts.items())


def show_ids() -> None:
    section("1. Event ids: the framework's pre-set M→MTE1 ids 0–2 leave the cube's M pipe too few")
    try:
        pingpong_gemm(AscendCBuilder(), symbolic_tiles(), Sym("n"), EventIdAllocator(EventIdRules()))
    except EventIdError as err:
        print(textwrap.indent(str(err), "  "))
    print("\n  → with the framework pipe object destroyed (EventIdRules(framework_preset=False)) it fits.")


def show_code() -> str:
    section("2a. Generated TileLang-Ascend (stand-in T: tilelang-ascend ships aarch64 wheels only)")
    T = StandInT()  # noqa: N806
    pingpong_gemm(TileLangBuilder(T), symbolic_tiles(), Sym("batch_iters"), EventIdAllocator(RULES), cid=Sym("cid"))
    print(T.text())
    section("2b. Generated AscendC (flag calls exact; data movement schematic)")
    c = AscendCBuilder()
    pingpong_gemm(c, symbolic_tiles(), Sym("batch_iters"), EventIdAllocator(RULES), cid=Sym("cid"))
    print(c.text())
    return T.text()


def request_loop() -> list[str]:
    """The request's loop body, as kept verbatim in examples/ascend_handwritten.py."""
    source = inspect.getsource(ascend_handwritten.handwritten_pingpong)
    body = source.split("# ---- the request, verbatim ----")[1].split("# ---- end of the request ----")[0]
    lines = [line.split("#")[0].rstrip() for line in textwrap.dedent(body).splitlines()]
    return [line.strip() for line in lines if line.strip()][1:]  # drop the `for` line


def show_diff(generated: str) -> None:
    section("2c. Request loop vs generated loop (unified diff; `side` is the request's name for i % 2)")
    lines = generated.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("for i in"))
    ours = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        ours.append(line.strip())
    theirs = [line.replace("side", "i % 2") for line in request_loop()]
    diff = list(difflib.unified_diff(theirs, ours, "request (side → i % 2)", "generated", lineterm="", n=1))
    print("\n".join(diff))
    flags = [line for line in theirs if "_flag(" in line] == [line for line in ours if "_flag(" in line]
    print(f"\n  flag calls identical and in the same order: {flags}")


def show_simulation(iters: int) -> None:
    section(f"3. The generated kernel in the simulator: {iters} K tiles, random fp16 Q and K")
    start = time.perf_counter()
    sim = pingpong_simulator(iters)
    report = sim.explore()
    seconds = time.perf_counter() - start
    run = report.runs[0]
    workspace = run.outputs["workspace"].astype(np.float32)
    expected = sim.expectations[0].expected.astype(np.float32)
    print(f"  {len(report.runs)} schedules ({', '.join(r.schedule for r in report.runs)}) in {seconds:.2f} s")
    print(f"  max |workspace - Q·Kᵀ (numpy, fp32)| = {np.abs(workspace - expected).max():.4f} (fp16 output)")
    print(summary(report))


def show_handwritten(iters: int) -> None:
    section("4. The user's hand-written schedule, run verbatim (priming/draining supplied in the usual ways)")
    id_sets = [("per pipe pair", HandIds()), ("sequential", SEQUENTIAL_IDS)]
    print(f"  ids per pipe pair (as TileLang-Ascend's expert examples number them): {HandIds()}")
    print(f"  ids sequential (every signal its own number): {SEQUENTIAL_IDS}\n")
    print(f"  {'ids':<14} {'around the loop':<80} {'framework pre-set':<18} distinct findings")
    reports = {}
    for label, ids in id_sets:
        for variant in VARIANTS:
            for preset in (False, True):
                report = handwritten_simulator(iters, variant, ids=ids, framework_preset=preset).explore()
                reports[(label, variant.name, preset)] = report
                print(f"  {label:<14} {variant.name:<80} {'alive' if preset else 'none':<18} {verdict(report)}")
        keyed = handwritten_simulator(
            iters, VARIANTS[1], ids=ids, framework_preset=False, flag_keying=Keying.SOURCE_PIPE
        ).explore()
        reports[(label, "source keying", False)] = keyed
        print(f"  {label:<14} {VARIANTS[1].name + ', flags keyed by (src, id)':<80} {'none':<18} {verdict(keyed)}")
    details = [
        (
            "As written, the loop deadlocks at iteration 0 (nothing primes the empty flags):",
            ("sequential", VARIANTS[0].name, False),
        ),
        (
            "Priming L0AB while the framework pipe object has pre-set M→MTE1 ids double-sets them:",
            ("sequential", VARIANTS[1].name, True),
        ),
        (
            "Signalling the Q load on SIG_K_L1 races with the first K tile when MTE2 runs ahead:",
            ("sequential", VARIANTS[3].name, False),
        ),
        (
            "Letting the first K tile's flag cover Q's load fails: step 2 reads q_l1 before step 3's wait:",
            ("sequential", VARIANTS[4].name, False),
        ),
        (
            "Per-pair ids share a number from one source pipe; if flags are keyed by (src, id) they collide:",
            ("per pipe pair", "source keying", False),
        ),
    ]
    for title, key in details:
        print(f"\n  {title}")
        print(summary(reports[key], limit=3, width=330))


def show_broken(iters: int) -> None:
    section("5. Broken variants of the generated kernel")
    for bug in (PingPongBug.RELEASE_L0_BEFORE_MMA, PingPongBug.HARD_CODED_RELEASE):
        print(f"\n  [{bug.value}]")
        print(summary(pingpong_simulator(iters, bug=bug).explore(), limit=5, width=600))


def show_cross_core(iters: int) -> None:
    section("6. Cube → vector through a GM workspace with cross-core flags (2 slots, 2 vector cores)")
    for bug in AttentionBug:
        report = attention_simulator(iters, bug=bug).explore()
        print(f"\n  [{bug.value}] {verdict(report)}")
        lost = [d for d in report.diagnoses if d.kind.name == "LOST_SIGNAL" and "aic FIX" in d.message]
        for d in lost[:1]:
            print(f"  e.g. {d.message}")
        if not lost and len(report.diagnoses):
            print(summary(report, limit=2, width=500))


def main(iters: int = 64, hand_iters: int = 6) -> None:
    show_ids()
    generated = show_code()
    show_diff(generated)
    show_simulation(iters)
    show_handwritten(hand_iters)
    show_broken(hand_iters)
    show_cross_core(hand_iters)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=64, help="K tiles in the simulated GEMM")
    parser.add_argument("--hand-iters", type=int, default=6, help="loop trips for the diagnosis runs")
    args = parser.parse_args()
    main(args.iters, args.hand_iters)
