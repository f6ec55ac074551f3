"""The masked engine's cryptographic functions timed inside a run (``benchmarks/masked_floor.py``).

:class:`InRun` wraps, for the length of a ``with`` block, the functions through which the masked
engine's party side (:mod:`parties.secure.masked_party`, through its cryptography,
:mod:`parties.secure.party_crypto`) and controller
(:mod:`parties.secure.unmasking`) reach the cryptography, plus the PKI's set-up
(:func:`parties.secure.pki.generate_signers`, as the shard calls it), and adds up the wall time
spent in each.  In a one-process run (the ``memory`` runtime) wall time is the process's CPU
time but for the rare moments the process is descheduled; ``time.perf_counter`` is read through
the vDSO, so one wrapper costs about 0.25 µs per call in a tight loop (a round method's 0.3 µs):
some 30 timed calls per party.  Inside a run the timers cost more than that sum: a masked-sparse
run of 32,561 parties takes 2-3 % more CPU with them than without (``masked_floor.py`` pairs each
timed run with one as it is, and reads the goal from the latter); the report counts the timers'
cost as the programs' own Python.  Some calls run outside a real party's round: where
``simulate``'s cost warning counts the programs (masked-sparse at L = 1,582: about 2,900 to 3,100
parties, before the run; none when its lower bound alone crosses the warning's threshold, as on
Adult), the counting driver runs the rounds' batches for its placeholder parties, which the
parties' programs group then counts, and they draw their handed view keys, which the CSPRNG
group counts too.

Each ``"floor"`` group is what one or more rows of ``masked_floor.items`` measure at their
floor, so the report can put the same calls side by side: at their floor (hot, best of
repeats), in the engine's function alone, and inside a run (the party's keys and data cold, the
interpreter's other work in between).  ``"outside"`` groups are cryptography the floor leaves
out.  The two ``"around"`` groups time every resumption of the programs (the parties' by their
hosts, :mod:`parties.party_sum`, with the batches of their answers that a host runs for many
parties at once: a masked party's rounds are those batches, its program a
:class:`~parties.secure.responder.Responder` that the host never resumes; the controller's by
:func:`parties.secure.drive.drive`): the
cryptography above runs inside them, so what they take beyond it is the programs' own Python
(the protocol's steps and checks, building the messages).

It also times the masked party's round methods (:data:`ROUNDS`), and the floor's calls made inside
each, so that the report can say which round's own Python costs what.  Beside the groups,
:class:`InRun` times the secure sums themselves in CPU (``time.process_time``; their wall time
too, on the groups' clock, which the groups' timers lie within): the controller's
:meth:`~parties.controller.Controller.secure_release`, from its request to the tallies (releases that overlap, as one interval); and, over the same intervals, the
kernel's part of that CPU and the process's minor page faults (``getrusage``): mostly the pages of
memory the sums touched first, which the kernel zero-fills (a sum that holds less at once faults
less); the kernel's time is split from the user's at the clock's tick, which a sum of seconds
makes small.
"""

from __future__ import annotations

import functools
import importlib
import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from parties import party_sum, shard
from parties.controller import Controller
from parties.secure import crypto, masked, masked_party, party_crypto, pki, unmasking

_drive = importlib.import_module("parties.secure.drive")  # (the module: the package exports its function too)


@dataclass(frozen=True)
class Group:
    """Functions timed together: ``targets`` as (owner, attribute name), the floor rows
    (``masked_floor.items``' item names with the calls per party of each) they perform, and
    ``part``: ``"floor"``, ``"outside"`` or ``"around"`` (module docstring)."""

    name: str
    targets: tuple[tuple[Any, str], ...]
    floor_rows: tuple[tuple[str, float], ...] = ()
    part: str = "floor"

    @property
    def floor(self) -> bool:
        return self.part == "floor"


PKI = "PKI set-up: the parties' static X25519 keys"
UNMASKING = "controller: secrets reconstructed, masks removed"
PARTY_PROGRAMS = "the parties' programs, resumed by their hosts (the calls above included)"
CONTROLLER_PROGRAM = "the controller's program, resumed by its driver (its unmasking included)"

GROUPS = (
    Group("X25519 masking key pair", ((crypto.KeyPair, "generate"),),
          (("X25519 key pair", 1),)),
    Group("X25519 static agreements", ((pki.Signer, "exchange_each"),),
          (("X25519 static agreement", 8),)),
    Group("HKDF of the channel, view and mask keys", ((party_crypto, "derive_keys_each"),),
          (("HMAC-SHA256 in HKDF", 40),)),
    Group("X25519 masking agreements", ((party_crypto, "exchange_each"),),
          (("X25519 masking agreement", 8), ("X25519 public key parse", 1))),
    Group("masks (ChaCha20 keystreams, added in place)", ((party_crypto, "add_masks"),),
          (("ChaCha20 mask of", 9),)),
    Group("Shamir sharing", ((party_crypto, "share_values"),), (("Shamir:", 1),)),
    Group("CSPRNG: self-mask seed, handed view keys", ((party_crypto, "fresh_seed"), (party_crypto, "pair_keys")),
          (("CSPRNG:", 2),)),
    Group("seal and open (ChaCha20-Poly1305)", ((party_crypto, "seal_each"), (party_crypto, "open_each")),
          (("ChaCha20-Poly1305 seal", 8), ("ChaCha20-Poly1305 open", 8))),
    Group("combined view keys", ((party_crypto, "combined_keys"),), (("combined view key", 56),)),
    Group("view tags written", ((party_crypto, "view_tags"),), (("view tag written", 64),)),
    Group("consistency check (tags checked, majorities counted)", ((party_crypto, "check_consistency_each"),),
          (("view tag checked", 32),)),
    Group(PKI, ((shard, "generate_signers"),), part="outside"),
    Group(UNMASKING, ((unmasking, "reconstruct_secret"), (unmasking, "interpolate_rows"), (unmasking, "add_masks")),
          part="outside"),
    Group(PARTY_PROGRAMS, ((party_sum, "step"), (party_sum, "throw"),
                           *((masked, batch) for batch in ("advertise_all", "share_keys_all", "mask_inputs",
                                                           "state_views", "unmask_all"))), part="around"),
    Group(CONTROLLER_PROGRAM, ((_drive, "step"),), part="around"),
)


ROUNDS = (
    ("0: masking key advertised", "advertise"),
    ("1: keys agreed, secrets shared and sealed", "share_keys"),
    ("2: shares opened, input masked", "mask_input"),
    ("3: survivor view stated and tagged", "state_view"),
    ("4: views checked, shares revealed", "unmask"),
)
"""The masked party's rounds (:class:`~parties.secure.masked_party.MaskedParty`'s methods), by label."""

BATCHES = {"share_keys": "share_keys_all", "mask_input": "mask_inputs", "state_view": "state_views",
           "unmask": "unmask_all"}
"""The rounds a host runs for many parties at once (the batch of the round's
:class:`~parties.secure.program.Answer`, by its name in :mod:`parties.secure.masked`): timed as
the round, per batch."""


class InRun:
    """Time :data:`GROUPS` while the ``with`` block runs: :attr:`seconds` per group name; and
    :attr:`sum_cpu`, the process's CPU seconds while the controller's secure releases run
    (:meth:`parties.controller.Controller.secure_release`: from its request to the tallies; in a
    one-process run every party's CPU too), i.e. the secure sums' CPU without the run's set-up
    and plain releases.  :attr:`rounds` holds, per label of :data:`ROUNDS`, the seconds the real
    parties' round methods took and the seconds of the floor groups' calls made inside them
    (the counting driver's placeholder parties, whose cryptography is not real, are not timed
    by round).  ``groups`` False: only :attr:`sum_cpu` is measured (one wrapper per secure
    release, nothing per party): a run as it is, whose CPU the goal reads, since the groups'
    and rounds' timers cost the run a few per cent (measured by ``masked_floor.py``, which runs
    both)."""

    def __init__(self, *, groups: bool = True) -> None:
        self.groups = groups
        self.seconds = {group.name: 0.0 for group in GROUPS}
        self.seconds_in_sums = {group.name: 0.0 for group in GROUPS}
        """:attr:`seconds` spent while a secure release ran (:attr:`sum_cpu`'s intervals): not the
        PKI's set-up before it, nor the programs that ``simulate``'s cost warning counts before the run."""
        self.sum_cpu = 0.0
        self.sum_wall = 0.0
        """The wall seconds of :attr:`sum_cpu`'s intervals (``time.perf_counter``, the groups' clock:
        :attr:`seconds_in_sums` lie within them)."""
        self.sum_system = 0.0
        """The kernel's CPU seconds within :attr:`sum_cpu` (system time: page faults, system calls)."""
        self.sum_faults = 0
        """Minor page faults of the process while the secure sums ran (mostly first touches of fresh memory)."""
        self.rounds = {label: [0.0, 0.0] for label, _ in ROUNDS}
        self._current: str | None = None  # the round method running now, if a real party's
        self._releases = 0  # secure releases under way
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> InRun:
        try:
            self._patch()
        except BaseException:  # (a name the engine no longer has: nothing stays patched)
            self.__exit__(None, None, None)
            raise
        return self

    def _patch(self) -> None:
        # the rounds first, the groups around them: a batch's round timer runs inside the programs' timer
        for label, name in ROUNDS if self.groups else ():
            raw = masked_party.MaskedParty.__dict__[name]
            self._saved.append((masked_party.MaskedParty, name, raw))
            setattr(masked_party.MaskedParty, name, self._round(label, raw))
            if name in BATCHES:  # (its calls' first argument: the first party's (party, message))
                batch = getattr(masked, BATCHES[name])
                self._saved.append((masked, BATCHES[name], batch))
                setattr(masked, BATCHES[name], self._round(label, batch, lambda calls: calls[0][0] if calls else None))
        for group in GROUPS if self.groups else ():
            for owner, name in group.targets:
                raw = owner.__dict__[name]  # (a classmethod stays one: wrap its function)
                self._saved.append((owner, name, raw))
                if isinstance(raw, classmethod):
                    setattr(owner, name, classmethod(self._timed(group.name, raw.__func__, group.floor)))
                else:
                    setattr(owner, name, self._timed(group.name, raw, group.floor))
        release = Controller.__dict__["secure_release"]
        self._saved.append((Controller, "secure_release", release))
        since = [0.0, 0.0]  # when the secure releases under way began, CPU and wall (overlapping ones: one interval)
        usage: list[Any] = [None]  # getrusage at the interval's start

        @functools.wraps(release)
        async def secure_release(*args: Any, **kwargs: Any) -> Any:
            if not self._releases:
                since[0], since[1] = time.process_time(), time.perf_counter()
                usage[0] = resource.getrusage(resource.RUSAGE_SELF)
            self._releases += 1
            try:
                return await release(*args, **kwargs)
            finally:
                self._releases -= 1
                if not self._releases:
                    self.sum_cpu += time.process_time() - since[0]
                    self.sum_wall += time.perf_counter() - since[1]
                    now = resource.getrusage(resource.RUSAGE_SELF)
                    self.sum_system += now.ru_stime - usage[0].ru_stime
                    self.sum_faults += now.ru_minflt - usage[0].ru_minflt

        setattr(Controller, "secure_release", secure_release)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for owner, name, raw in reversed(self._saved):
            setattr(owner, name, raw)
        self._saved.clear()

    def _timed(self, key: str, fn: Callable[..., Any], floor: bool) -> Callable[..., Any]:
        seconds, in_sums, rounds, clock = self.seconds, self.seconds_in_sums, self.rounds, time.perf_counter

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = clock() - start
                seconds[key] += elapsed
                if self._releases:
                    in_sums[key] += elapsed
                if floor and self._current is not None:
                    rounds[self._current][1] += elapsed

        return timed

    def _round(self, label: str, fn: Callable[..., Any],
               party_of: Callable[[Any], masked_party.MaskedParty | None] = lambda party: party) -> Callable[..., Any]:
        rounds, clock = self.rounds, time.perf_counter

        def timed(first: Any, *args: Any, **kwargs: Any) -> Any:
            party = party_of(first)
            if party is None or not party.crypto.real or self._current is not None:
                return fn(first, *args, **kwargs)
            self._current = label
            start = clock()
            try:
                return fn(first, *args, **kwargs)
            finally:
                rounds[label][0] += clock() - start
                self._current = None

        return timed


def floor_of(group: Group, floors: Mapping[str, float]) -> float:
    """Seconds per party of ``group``'s calls at their floor (``floors``: seconds per call by
    ``masked_floor.items``' item name, the best rounds' or the rounds' mean)."""
    total = 0.0
    for prefix, count in group.floor_rows:
        matches = [floor for name, floor in floors.items() if name.startswith(prefix)]
        if len(matches) != 1:
            raise LookupError(f"floor row {prefix!r} matches {len(matches)} rows of the floor's items")
        total += count * matches[0]
    return total
