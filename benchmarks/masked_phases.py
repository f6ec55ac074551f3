"""Benchmark: the masked party's rounds replayed for all parties, in turn and one pass per kind of work.

Issue 28 asks for the masked-sparse sum at <= 1.5 x the cryptographic floor that
``benchmarks/masked_floor.py`` measures.  The route its numbers pointed to is a host that steps
all its parties together, one pass per kind of work (every party's shares opened, then every
party's masking agreements, ...), instead of each party's round in turn; hosts now do so for
rounds 1 and 2 (:func:`~parties.secure.masked_party.share_keys_all`, ``mask_inputs``).  This
measures the rounds and that route's gain on round 2, with the engine's own functions:

1. the masked-sparse sum of L = 1,582 cells over ``n`` parties (default 4,000; k = 8, t = 5) runs
   with the counting driver (real cryptography, a fresh PKI, no event loop), each party's round
   method (:class:`~parties.secure.masked_party.MaskedParty`) timed in CPU as it runs (one
   ``time.process_time`` pair per call), and each party's state before each round kept (a
   shallow copy: a round replaces the state it changes, it mutates none) with the controller's
   message of that round; the controller's program and the parties' programs are timed the
   same way, step by step, so that what the run spends beside the party rounds splits into the
   controller's program, the parties' programs' I/O and the counting driver;
2. each round is replayed for all parties, each party's round in turn (as a host steps them now);
3. round 2, the largest (the shares opened and checked, the combined view keys, the input, the
   masking agreements and the masks), is also replayed one pass per kind of work across all
   parties (:func:`phased_mask_input`: the engine's
   :func:`~parties.secure.masked_party.mask_inputs`, which a host runs for the parties that
   reach round 2 on one turn); its masked inputs and view keys are checked equal to the round's own.

Beside each round: its floor, the library calls it makes at their floor (``_floor_items``, best of
``--repeat`` rounds).  Both replays alternate ``--repeats`` times; each keeps its fastest (the
"in run" column is the one pass of the run, with the recorder's wrapper around each call; the
programs' time leaves out the states' copies but not the wrapper).  The copies are the parties'
small slot objects (what they hold is shared): copied in a shuffled order, the replays take as
long.  The report's last lines put the party rounds at the route's best, measured (round 2 one
pass per kind of work, the other rounds replayed in turn) and extrapolated (every round with
round 2's gain), and say what the goal leaves beside them for the controller's program, the
drivers and the runtime; then, with the controller's program as it ran, what it leaves for the
drivers, the parties' I/O and the runtime alone.  The phased round reorders the same per-party
calls by kind; array forms across parties (a batched check, messages as columns) are not
measured here.

Run: ``.venv/bin/python benchmarks/masked_phases.py [--n N] [--repeats R] [--repeat R]``
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import os
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _floor_items import CELLS, Item, items  # noqa: E402  (benchmarks/_floor_items.py)
from _in_run import ROUNDS  # noqa: E402  (benchmarks/_in_run.py)

from parties.collector import rare_full_collections  # noqa: E402
from parties.secure import masked, masked_party  # noqa: E402
from parties.secure.engine import counted_cost  # noqa: E402
from parties.secure.messages import MaskedInput  # noqa: E402
from parties.secure.registry import make_engine  # noqa: E402
from parties.secure.suite import REAL  # noqa: E402

FLOOR_ROWS: dict[str, tuple[tuple[str, int], ...]] = {
    "advertise": (("X25519 key pair", 1),),
    "share_keys": (("X25519 static agreement", 8), ("HMAC-SHA256 in HKDF", 24), ("ChaCha20-Poly1305 seal", 8),
                   ("Shamir:", 1), ("CSPRNG:", 2)),
    "mask_input": (("ChaCha20-Poly1305 open", 8), ("combined view key", 56), ("X25519 masking agreement", 8),
                   ("X25519 public key parse", 1), ("HMAC-SHA256 in HKDF", 16), ("ChaCha20 mask of", 9)),
    "state_view": (("view tag written", 64),),
    "unmask": (("view tag checked", 32),),
}
"""The floor's calls each round method makes (``_floor_items`` rows by the start of their name,
calls per party): together, the floor's rows and counts."""

_BATCHES = ("advertise_all", "share_keys_all", "mask_inputs", "state_views", "unmask_all")
"""The names of the rounds' batches in :mod:`parties.secure.masked` (what ``_rounds`` reads)."""

_Captured = list[tuple[Any, Any]]
"""A round's (party state before it, the controller's message of the round or None) per party."""


@dataclass
class Capture:
    """What :func:`capture` keeps: per round method, the parties' states and messages, and the
    CPU seconds the round took inside the programs' run; the run's CPU seconds in all."""

    n: int
    rounds: dict[str, _Captured] = field(default_factory=dict)
    in_run: dict[str, float] = field(default_factory=dict)
    programs: float = 0.0
    """The programs' run, CPU seconds (the states' copies left out)."""
    controller: float = 0.0
    """CPU seconds inside the controller's program in that run (its steps, from the driver's
    resumption to its next operation)."""
    parties: float = 0.0
    """CPU seconds inside the parties' programs in that run (the round methods and the rounds'
    I/O around them; the states' copies left out)."""
    copying: float = 0.0
    stepping: bool = False
    """A program's step is running (a round method called outside one is an Answer's, run by the driver)."""


@contextmanager
def _recording(into: Capture) -> Iterator[None]:
    """Wrap :class:`MaskedParty`'s round methods: each call keeps a shallow copy of the party
    and its argument, and adds its CPU time to ``into.in_run`` (restored on exit).  The rounds'
    batches are taken away meanwhile, so that the counting driver runs each party's round on its
    own (its round method), as this benchmark measures them."""
    cls = masked_party.MaskedParty
    saved = {name: getattr(cls, name) for _, name in ROUNDS}
    batches = {name: getattr(masked, name) for name in _BATCHES}
    clock = time.process_time

    def recorded(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        kept, spent = into.rounds.setdefault(name, []), into.in_run

        def round_method(self: Any, *args: Any) -> Any:
            start = clock()
            kept.append((copy.copy(self), args[0] if args else None))
            copied = clock()
            try:
                return method(self, *args)
            finally:
                spent[name] = spent.get(name, 0.0) + clock() - copied
                if not into.stepping:  # (an Answer's computation, run by the driver: the party's own)
                    into.parties += clock() - copied
                into.copying += copied - start
        return round_method

    engine_cls = masked.MaskedEngine
    programs = {name: getattr(engine_cls, name) for name in ("controller_program", "party_program")}

    def controller_program(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _timed_steps(programs["controller_program"](self, *args, **kwargs), into, "controller")

    def party_program(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _timed_steps(programs["party_program"](self, *args, **kwargs), into, "parties")

    try:
        for name in batches:
            setattr(masked, name, None)
        for name, method in saved.items():
            setattr(cls, name, recorded(name, method))
        engine_cls.controller_program = controller_program  # type: ignore[method-assign]
        engine_cls.party_program = party_program  # type: ignore[method-assign]
        yield
    finally:
        for name, batch in batches.items():
            setattr(masked, name, batch)
        for name, method in saved.items():
            setattr(cls, name, method)
        for name, method in programs.items():
            setattr(engine_cls, name, method)


def _timed_steps(program: Generator[Any, Any, Any], into: Capture, role: str) -> Generator[Any, Any, Any]:
    """``program`` as it is, its steps' CPU seconds added to ``into``'s ``role`` field (the
    states' copies a party's round methods make left out)."""
    clock, sent = time.process_time, None
    while True:
        start, copied = clock(), into.copying
        into.stepping = True
        try:
            op = program.send(sent)
        except StopIteration as stop:
            return stop.value
        finally:
            into.stepping = False
            setattr(into, role, getattr(into, role) + clock() - start - (into.copying - copied))
        sent = yield op


def capture(n: int) -> Capture:
    """Run the sum of ``n`` parties with the counting driver (real cryptography) and keep every
    party's rounds (:class:`Capture`)."""
    engine = make_engine("masked-sparse")
    ctx = engine.context(range(n), CELLS, session="bench-phases")
    kept = Capture(n)
    with _recording(kept), rare_full_collections():
        start = time.process_time()
        counted_cost(engine, ctx, suite=REAL, mirror=False)
        kept.programs = time.process_time() - start - kept.copying
    for _, name in ROUNDS:
        if len(kept.rounds.get(name, ())) != n:
            raise RuntimeError(f"round {name} ran {len(kept.rounds.get(name, ()))} times for {n} parties")
    return kept


def per_party(name: str, captured: _Captured) -> list[Any]:
    """Round ``name`` of each party in turn: its round method."""
    return [getattr(party, name)(*(() if message is None else (message,))) for party, message in captured]


def phased_mask_input(captured: _Captured) -> list[MaskedInput]:
    """Round 2 of every party, one pass per kind of work across all of them: the engine's
    :func:`~parties.secure.masked_party.mask_inputs`, which a host runs for the parties that
    reach round 2 on one turn of its loop (an error of a party's round: RuntimeError)."""
    out = []
    for reply in masked_party.mask_inputs(list(captured)):
        if not isinstance(reply, MaskedInput):
            raise RuntimeError(f"the phased round 2 failed: {reply}")
        out.append(reply)
    return out


def _fresh(captured: _Captured) -> _Captured:
    """The captured states copied again, so that a replay starts where the run's round did."""
    return [(copy.copy(party), message) for party, message in captured]


def _timed(fn: Callable[[_Captured], list[Any]], captured: _Captured) -> tuple[float, list[Any], _Captured]:
    states = _fresh(captured)
    gc.collect()
    with rare_full_collections():
        start = time.process_time()
        out = fn(states)
        spent = time.process_time() - start
    return spent, out, states


def floor_of(rows: list[Item], name: str) -> float:
    """Seconds per party of the floor's calls that round ``name`` makes (:data:`FLOOR_ROWS`)."""
    total = 0.0
    for start, calls in FLOOR_ROWS[name]:
        matches = [row for row in rows if row.name.startswith(start)]
        if len(matches) != 1:
            raise RuntimeError(f"floor row {start!r}: {len(matches)} rows match")
        total += matches[0].floor * calls
    return total


@dataclass(frozen=True)
class Replays:
    """Fastest CPU seconds of each round replayed per party in turn, and of round 2 phased."""

    per_party: dict[str, float]
    phased: float


def replay(kept: Capture, repeats: int) -> Replays:
    """:func:`per_party` for every round and :func:`phased_mask_input`, ``repeats`` times in
    alternation (the fastest kept); the phased round checked equal to the round method."""
    best = {name: float("inf") for _, name in ROUNDS}
    phased = float("inf")
    for _ in range(repeats):
        for _, name in ROUNDS:
            spent, out, states = _timed(functools.partial(per_party, name), kept.rounds[name])
            best[name] = min(best[name], spent)
            if name == "mask_input":
                reference = ([m.values for m in out], [(party.view_keys, party.held) for party, _ in states])
        spent, out, states = _timed(phased_mask_input, kept.rounds["mask_input"])
        phased = min(phased, spent)
        if ([m.values.tobytes() for m in out] != [v.tobytes() for v in reference[0]]
                or [(party.view_keys, party.held) for party, _ in states] != reference[1]):
            raise RuntimeError("the phased round 2 does not give the round method's masked inputs, view keys and "
                               "shares held")
    return Replays(best, phased)


def report(kept: Capture, replays: Replays, rows: list[Item]) -> dict[str, float]:
    """Print the table and the route's best case; return its figures (µs per party, ratios)."""
    n = kept.n
    us = 1e6 / n
    floor_total = sum(row.floor * row.calls for row in rows if row.calls)
    print(f"\nThe masked party's rounds, {n:,} parties (k = 8, t = 5, L = {CELLS:,}), CPU µs per party")
    print(f"{'round':44s} {'floor':>8s} {'in run':>8s} {'replay':>8s} {'phased':>8s}")
    sums = {"floor": 0.0, "in run": 0.0, "replay": 0.0}
    for label, name in ROUNDS:
        floor = floor_of(rows, name) * 1e6
        in_run, again = kept.in_run[name] * us, replays.per_party[name] * us
        phased = f"{replays.phased * us:8.1f}" if name == "mask_input" else f"{'':8s}"
        print(f"{label:44s} {floor:8.1f} {in_run:8.1f} {again:8.1f} {phased}")
        for key, value in (("floor", floor), ("in run", in_run), ("replay", again)):
            sums[key] += value
    print(f"{'the party rounds':44s} {sums['floor']:8.1f} {sums['in run']:8.1f} {sums['replay']:8.1f}")
    if abs(sums["floor"] - floor_total * 1e6) > 1e-6 * sums["floor"]:
        raise RuntimeError(f"the rounds' floors add up to {sums['floor']:.3f} µs, the floor's rows to "
                           f"{floor_total * 1e6:.3f} µs: FLOOR_ROWS misses a row")
    programs = kept.programs * us
    around = programs - sums["in run"]
    controller = kept.controller * us
    io = kept.parties * us - sums["in run"]  # the parties' programs beyond their round methods
    driver = around - controller - io
    gain = 1 - replays.phased / replays.per_party["mask_input"]
    measured = sums["replay"] - (replays.per_party["mask_input"] - replays.phased) * us
    best = sums["replay"] * (1 - gain)
    goal = 1.5 * floor_total * 1e6
    print(f"the floor of a party in all: {floor_total * 1e6:.1f} µs; the goal, 1.5 x: {goal:.1f} µs per party")
    print(f"the programs' run: {programs:.1f} µs per party = {programs / (floor_total * 1e6):.2f} x the floor; beside "
          f"the party rounds {around:.1f}: the controller's program {controller:.1f}, the parties' programs' I/O "
          f"{io:.1f}, the counting driver {driver:.1f}")
    print(f"round 2 one pass per kind of work: {replays.phased * us:.1f} µs against {replays.per_party['mask_input'] * us:.1f} "
          f"in turn ({100 * gain:.1f} % saved; its floor {floor_of(rows, 'mask_input') * 1e6:.1f})")
    print(f"the party rounds at the route's best, measured (each round for all parties together; round 2 one pass "
          f"per kind of work): {measured:.1f} µs = {measured / (floor_total * 1e6):.2f} x the floor, leaving "
          f"{goal - measured:.1f} µs of the goal beside them for the controller's program, the drivers and the runtime "
          f"({around:.1f} in this run without a runtime)")
    print(f"  with the controller's program as in this run: {measured + controller:.1f} µs = "
          f"{(measured + controller) / (floor_total * 1e6):.2f} x the floor, leaving {goal - measured - controller:.1f} µs "
          f"for the drivers, the parties' I/O and the runtime ({io + driver:.1f} in this run without a runtime)")
    print(f"  extrapolated (every round {100 * gain:.1f} % cheaper one pass per kind of work): {best:.1f} µs = "
          f"{best / (floor_total * 1e6):.2f} x the floor, leaving {goal - best:.1f} µs ({goal - best - controller:.1f} "
          f"beside the controller's program)")
    return {"floor": floor_total * 1e6, "programs": programs, "around": around, "gain": gain,
            "measured": measured, "left": goal - measured, "best": best, "best_left": goal - best,
            "controller": controller, "io": io, "driver": driver, "route_left": goal - measured - controller}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=4_000, help="parties (default 4,000)")
    parser.add_argument("--repeats", type=int, default=3, help="replays of each round, alternated (default 3)")
    parser.add_argument("--repeat", type=int, default=7, help="timing rounds of the floor (default 7)")
    args = parser.parse_args(argv)
    if args.n < 10 or args.repeats < 1 or args.repeat < 1:
        parser.error("--n must be >= 10, --repeats and --repeat >= 1")
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    kept = capture(args.n)
    replays = replay(kept, args.repeats)
    rows = items(args.repeat)
    report(kept, replays, rows)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
