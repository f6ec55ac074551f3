"""parties.wire — the wire format: typed frozen messages and the one binary codec.

Modules, in dependency order:

- ``construct`` — the constructor of a kind, generated from its fields (convert, fill, validate
                  in one pass)
- ``fields``    — the field types: what each annotation means on the wire (``Wire``: convert,
                  write, read back), ``ArraySpec``
- ``codec``     — the ``Message`` base and ``@message`` registration, and the one codec
                  (message <-> bytes) generated from each kind's annotations
- ``messages``  — the generic kinds (released codes, oracle reports, refusals, aborts, acks) and
                  ``ReplyBlock``, the wire form of reply columns
- ``requests``  — the controller's release and report requests, matrices as
                  :class:`~mprr.protocols.steps.MatrixSpec`, oracles as family and ε
"""
