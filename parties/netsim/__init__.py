"""parties.netsim — time on a network: a network model and the virtual-time runtime.

The model is math apart from I/O (the TOML and CSV readers are separate functions); the runtime
runs the real protocol (real messages, real byte counts) on a virtual clock and delivers each
frame when the model says it arrives.  ``docs/network_time.md`` describes both.

Modules, in dependency order:

- ``profiles``     — ``LinkProfile`` / ``Spread``: per-party uplink, downlink, latency
                     distributions; the shipped profiles (datacenter, broadband, mobile, with
                     sources) and their TOML form
- ``framing``      — ``Framing``: bytes on the wire per message (the tcp runtime's channel
                     record, TLS 1.3 records, TCP/IP headers)
- ``compute``      — ``CryptoCosts``: compute time per message from calibrated X25519, HKDF,
                     ChaCha20, AEAD, Shamir costs (``calibrate``, ``DEFAULT_COSTS``)
- ``processing``   — ``ProcessingCosts``: the runtime's own CPU per frame and byte (codec,
                     channel records, TLS, the controller's routing; ``calibrate_processing``,
                     ``DEFAULT_PROCESSING``)
- ``availability`` — ``Availability`` / ``Traces``: dropout per round, on/off traces from CSV
- ``model``        — ``NetworkModel`` (all of the above + the controller's link, shared
                     host CPUs, seed), ``model_from_toml``
- ``links``        — ``LinkScheduler``: FIFO links and CPUs (shared by a host's parties),
                     arrival = queueing + size over the bottleneck + latency
- ``timeline``     — ``Timeline``: every frame's times; per-round times, misses, bytes per
                     link, where the time went
- ``clock``        — ``VirtualClockLoop`` / ``run_virtual``: an asyncio loop on a virtual clock
- ``network``      — ``TimedNetwork``: the router (:class:`parties.router.Router`)
                     delivering each frame at its modelled arrival time
- ``runtime``      — ``VirtualRuntime`` (``runtime="virtual"``): the memory runtime's shards on
                     a ``TimedNetwork``
"""
