"""parties.wire — the wire format: typed frozen messages and the one binary codec.

Modules, in dependency order:

- ``fields``    — field types a message may have (ints, floats, strings, bytes, tuples, arrays)
- ``messages``  — the ``Message`` base, ``@message`` registration, the generic kinds (replies,
                  refusals, aborts, acks)
- ``codec``     — the one codec: message <-> bytes; decoding rejects the unexpected
- ``requests``  — the controller's release requests (kinds 100-102), matrices as
                  :class:`~mprr.protocols.steps.MatrixSpec`
"""
