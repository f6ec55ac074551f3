"""parties — the distributed runtime: asyncio actors exchanging real serialized messages.

Imports go one way: ``parties`` may import ``mprr``; ``mprr`` never imports ``parties``;
``parties`` never imports ``scenarios``. Nothing runs at import time.

The runtime is a router, links and hosts.  The :class:`~parties.router.Router`, in the
controller's process, routes frames between the actors it hosts and the links to the hosts,
counts the traffic, applies the fault plan and rejects bad frames; a
:class:`~parties.link.Link` per host (a direct call in memory, a TLS stream to a worker, a Ray
actor link) is all the router knows of it; a host (:class:`~parties.shard.PartyShard`) runs
many parties on one event loop.  Router, links, hosts, transports and endpoints talk through
documented public methods only (no object reads another's private attributes:
``tests/test_layering.py``).

Modules, in dependency order:

- ``collector``     — full garbage collections made rarely during a run (``rare_full_collections``)
- ``plugins``       — ``load_plugins``: modules an operator loads (their protocols, engines and
                      families register at import), whose classes the channel then rebuilds
- ``wire``          — typed messages and the one codec (package, own map: fields, messages,
                      codec, requests)
- ``topology``      — who may talk to whom (networkx graphs; default star)
- ``traffic``       — per sender / receiver / kind / phase counters, rounds, simulated time
- ``faults``        — seeded fault plans: drop, delay, duplicate, reorder, crash
- ``columns``       — ``ReplyColumns``: a shard's replies to one release request carried together
                      (party ids, codes matrix, each message's codec size), never one object each;
                      between processes as one frame (its wire form ``ReplyBlock``)
- ``awaited``       — ``Awaited``: the sources a receive still awaits, one flag per actor of their span
- ``envelope``      — ``Envelope`` (a delivered message) and ``Rejection`` (a rejected frame)
- ``waiter``        — a pending receive: its filters, the sources it awaits, its catch
- ``inbox``         — an actor's delivered messages buffered in arrival order, pending receives,
                      rejected frames (the delivery side)
- ``mailbox``       — an actor's filtered receive (recv / recv_many / gather / gather_columns /
                      collect)
- ``transport``     — the ``Transport`` interface (the endpoints' public side: ``send`` /
                      ``send_each`` / ``broadcast``, ``check_link``, ``is_crashed``, ``reject``),
                      ``Endpoint`` (send / send_each / broadcast + its mailbox), ``Frame``, ``CONTROLLER``
- ``link``          — ``Link``: the router's handle on one party host (``push`` / ``push_many`` /
                      ``crash`` / ``buffered``), the only way it reaches parties hosted there
- ``router``        — ``Router``: the run's router in the controller process (mailboxes of the
                      actors it hosts, a link per party host; it routes, counts, injects faults and
                      rejects bad frames: the sender's fault, never the run's end)
- ``secure``        — secure-sum engines ``paper`` | ``graph`` | ``masked`` (main paper 4.2;
                      Bonawitz et al. 2017); package with its own map
- ``public_state``  — public objects shared by a run's actors: release book, secure-sum sessions
- ``view``          — the controller's view log (everything it received)
- ``party``         — the ``Party`` actor: private record, own stream, own privacy accountant; a
                      pure handler (a reply, or a secure-sum program for its host to drive)
- ``party_sum``     — ``PartySums``: a host steps all its parties' secure-sum programs from the
                      frames it delivers (rounds, deadlines, no task per party) and tells each
                      party how its program ended
- ``shard_report``  — what a shard hands back after a run: its parties' summaries, in columns
- ``cohort``        — a shard's parties in identical state, as columns: a broadcast release
                      request answered for all of them in one vectorized step; the shard's
                      table of its cohorts (``CohortTable``)
- ``cohort_sum``    — ``CohortSums``: a cohort's members commit, start and end a secure sum in
                      their cohort, each running its own side; one whose side diverges leaves it
- ``built_release`` — parties built on their own answering one release request together: each
                      decides, the granted codes drawn at once
- ``report_phase``  — what a phase of frequency-oracle reports brings back: the check of each
                      party's ``OracleReport`` and the phase's ``ReportedData``
- ``recording``     — ``RecordingEndpoint``: the controller's endpoint, logging all it receives to the view
- ``phase_release`` — ``PhaseRelease``: what one phase brought back to the controller
- ``dropout``       — the dropout policy (``fail`` | ``exclude``) and ``ReleaseRefused``
- ``exchange``      — one request and its replies: a round under one ``asyncio.timeout``, with retries
- ``reply_table``   — the replies to a release request as one ``(parties, units)`` table, checked at once
- ``controller``    — the untrusted ``Controller`` actor
- ``driver``        — ``run_actors``: answers a protocol's steps (:mod:`mprr.protocols.steps`)
                      with the controller's rounds (releases, frequency-oracle reports) and
                      secure sums, each step checked against the program's plan
- ``choreographies`` — a curious controller's extra requests, for the attack tests (package)
- ``shard_setup``   — ``ShardSetup`` (what a shard host builds its parties from), ``split``
                      (the parties' ranges of the shards) and ``directory`` (their keys, joined)
- ``shard_network`` — ``ShardNetwork``: a party host's transport (its sends go up the link)
- ``shard``         — ``PartyShard``, the party host: many parties on one event loop behind a link
- ``hosted_parties`` — ``HostedParties``: a host's parties read as ``Party`` objects (built on access)
- ``channel``       — the frame channel's records (length-prefixed frames, reply columns as one
                      record, restricted control records)
- ``runtime``       — ``Runtime`` / ``HostingPlan`` (keyword-only, validated) / ``Hosting``: the
                      memory runtime (one or more hosts, each behind a ``LocalLink``)
- ``tls``           — per-run CA and mutual-TLS certificates (``cryptography``, stdlib ``ssl``)
- ``tcp``           — the ``tcp`` runtime: worker processes over TLS (a stream link each), supervision
- ``worker``        — a ``tcp`` worker process (``mprr party``): connect, host parties, serve runs
- ``ray_runtime``   — the ``ray`` runtime: party hosts as Ray async actors behind an actor link
                      (optional extra)
- ``netsim``        — time on a network: a network model (links, framing, compute, availability)
                      and the ``virtual`` runtime running the real protocol on a virtual clock
                      (package, own map)
- ``runtime_registry`` — ``RUNTIMES`` / ``make_runtime``: a runtime object by name (memory | tcp | ray |
                      virtual)
- ``simulate``      — ``simulate(dataset, protocol, ..., seed, runtime)``: one run of the actor path,
                      set up from the program's plan (:mod:`mprr.protocols.plan`)
"""
