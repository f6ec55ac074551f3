"""parties.secure — secure-sum engines: exact count vectors without revealing any input.

Modules, in dependency order:

- ``prg``       — ChaCha20 keystream PRG, fresh seeds from :mod:`secrets`
- ``ring``      — Z_M arithmetic (numpy, smallest unsigned dtype) and exact uniform sampling
- ``sharing``   — additive shares over Z_M (main paper 4.2: n shares summing to 0 mod n + 1)
- ``shamir``    — Shamir t-of-k sharing over GF(2^256 + 297) for 32-byte seeds and keys
- ``crypto``    — X25519 key agreement, HKDF-SHA256, ChaCha20-Poly1305 AEAD channels
- ``pki``       — simulated PKI: X25519 static keys, Ed25519 signing keys where an engine signs,
                 and their registry, fixed at set-up
- ``topology``  — communication graphs: complete, random k-regular, Harary (networkx)
- ``suite``     — the cryptography a program calls: ``REAL``, or ``SIZING`` (right-sized
                 stand-ins, for the counting driver only)
- ``messages``  — the wire kinds of the secure sums (shares, partial sums, keys, ...)
- ``context``   — ``SecureSumContext``: what every participant of one sum agrees on
- ``values``    — a party's input checked and mapped into Z_M; totals as exact int64 counts
- ``program``   — the sans-I/O model: a role's program yields sends / broadcasts / expectations
                 and receives what came (``Send``, ``Expect``, ``Delivery``, ...; ``receive``,
                 ``from_controller``, ``controller_message``)
- ``responder`` — ``Responder``: a program of a first reply and rounds that each answer the
                 controller, written as its parts, which a host of many parties runs itself
- ``rounds``    — a driver's state of one open round (``RoundState``) and one program step
- ``drive``     — the asyncio driver: one program over an endpoint, one asyncio timeout per round
- ``sizing``    — ``SizeByShape``: encoded sizes, one encoding per message shape
- ``counting``  — the counting driver: every role in-process, the traffic counted (``count``;
                 a role-symmetric sum: the controller and one party, mirrored)
- ``cost``      — ``TrafficCost``: the traffic of a fault-free run (the closed form)
- ``engine``    — ``SecureSumEngine`` interface (per-role programs), ``SumOutcome``, and
                 ``counted_cost``: an engine's programs run by the counting driver
- ``run``       — ``run_secure_sum``: the stand-alone driver (controller and parties as tasks of
                 one TaskGroup on one network) and its ``SecureSumResult``
- ``agreement`` — a sum is one agreed request: the session id every participant derives from
                  the request and the start, and the unit-total check of a sum
- ``receive``   — a party's round of share vectors folded as they arrive: check, sum, reject
- ``paper``     — engine ``paper``: main paper 4.2, modulus n + 1, full mesh, broadcast
- ``graph``     — engine ``graph``: additive shares to neighbours of a sparse graph
- ``views``     — the masked engine's consistency round: survivor views stated once, MAC'd
- ``unmasking`` — the masked engine's round 4 at the controller: shares checked as they arrive,
                 self masks and the dropped parties' pairwise masks removed
- ``masked_server`` — the masked engine's controller program: relay, masked inputs, consistency
                 round, unmasking
- ``masked_party`` — the masked engine's party side: one party's rounds as a sans-I/O state
                 machine (``MaskedParty``), and the batches that run a round for many parties
- ``party_crypto`` — the cryptography a masked party calls (``PartyCryptography``: the real
                 primitives, or right-sized stand-ins for the counting driver) and its masking
- ``masked``    — engine ``masked``: Bonawitz et al. 2017 pairwise masks + Shamir recovery (the
                 engine, its traffic bounds, the party's program: a ``Responder`` over ``MaskedParty``)
- ``registry``  — ``ENGINES``: ``EngineEntry`` objects by name (paper, paper-per-combination, graph,
                 graph-direct, masked, masked-sparse) in a :class:`mprr.registry.Registry`, each
                 with all that is known of its engine (message kinds, needs, dropouts, plot style);
                 ``register_engine`` for one's own, ``make_engine``, ``sized_engine``; used by the
                 actor driver, the scenarios and the benchmarks
"""
