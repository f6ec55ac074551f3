"""parties — the distributed runtime: asyncio actors exchanging real serialized messages.

Imports go one way: ``parties`` may import ``mprr``; ``mprr`` never imports ``parties``.
Nothing runs at import time.

Modules, in dependency order:

- ``messages``    — frozen, validated dataclasses, one class per message kind
- ``codec``       — the one codec: message <-> bytes; decoding rejects the unexpected
- ``network``     — transport interface, in-memory network, topology, statistics, faults
"""
