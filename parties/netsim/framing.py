"""Bytes a message occupies on a real link: the payload plus the tcp runtime's framing and TLS.

The one codec's payload (:mod:`parties.wire.codec`) travels in the tcp runtime as a ``DATA``
record of :mod:`parties.channel` (header + phase name + payload), preceded by its 4-byte length,
inside TLS 1.3 records, inside TCP segments.  :class:`Framing` adds, per message:

- the channel's record overhead, measured from :func:`parties.channel.frame_record` and
  :func:`parties.channel.pack_stream` (the length prefix, the ``DATA`` header and the phase's
  UTF-8 bytes; :meth:`Framing.measured`);
- TLS 1.3 record overhead: 5 header bytes, 1 inner content-type byte and a 16-byte AEAD tag per
  record of at most 16,384 plaintext bytes (RFC 8446, sections 5.1-5.2), i.e. 22 bytes per
  started 16 KiB (measured on a session with the tcp runtime's own TLS contexts,
  :mod:`parties.tls`, in ``tests/parties/netsim/test_framing.py``);
- TCP/IP headers: 52 bytes (IPv4 20 + TCP 20 + timestamp option 12) per segment of at most
  1,448 payload bytes (an MSS of a 1,500-byte Ethernet MTU with timestamps).

By default each message is counted as its own TLS record(s) and segment(s): a bound from above
on the overhead.  The tcp runtime batches: the records it sends to one peer in one event-loop
turn leave as one write (:class:`parties.channel.RecordBatcher`), which TLS cuts into records of
16 KiB and TCP into full segments.  ``batched=True`` describes that in its limit of large
batches: a message adds its share of the record and segment headers, ``22 / 16,384`` and
``52 / 1,448`` of its bytes, and no whole record or segment of its own (a bound from below: a
batch's last record and segment are not full).

``wire_size(payload, phase)`` is the closed form; it is exact for the record layer and a
per-message bound (from above, or from below when batched) for the two lower layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from mprr.domain import check_int
from parties.channel import frame_record, pack_stream
from parties.transport import Frame

__all__ = ["Framing", "TLS_RECORD", "TLS_RECORD_OVERHEAD", "TCP_MSS", "TCP_IP_HEADERS"]

TLS_RECORD = 16_384
"""Largest TLS 1.3 plaintext record (RFC 8446, 5.1)."""
TLS_RECORD_OVERHEAD = 5 + 1 + 16
"""Bytes a TLS 1.3 record adds: header, inner content type, AEAD tag (RFC 8446, 5.2)."""
TCP_MSS = 1_448
"""TCP payload bytes per segment (1,500-byte MTU - 20 IPv4 - 20 TCP - 12 timestamps)."""
TCP_IP_HEADERS = 52
"""Header bytes per TCP segment (IPv4 20 + TCP 20 + timestamp option 12)."""


@dataclass(frozen=True)
class Framing:
    """Per-message overhead on the wire (module docstring).

    Parameters
    ----------
    record
        Channel bytes per message besides the payload and the phase name (length prefix +
        ``DATA`` header; :meth:`measured` reads it from :mod:`parties.channel`).
    tls
        Count TLS 1.3 record overhead.
    tcp
        Count TCP/IP headers.
    batched
        Charge the TLS and TCP/IP headers in proportion to the bytes (frames batched into full
        records and segments) instead of at least one record and segment per message.
    """

    record: int
    tls: bool = True
    tcp: bool = True
    batched: bool = False

    def __post_init__(self) -> None:
        check_int("Framing.record", self.record, 0)

    @classmethod
    def measured(cls, *, tls: bool = True, tcp: bool = True, batched: bool = False) -> Framing:
        """The framing of :mod:`parties.channel`, measured on an empty frame with an empty phase
        name (its record minus its payload, plus the stream's length prefix)."""
        record = frame_record(Frame(0, -1, "", 0, b""))
        return cls(len(pack_stream([record])), tls, tcp, batched)

    @classmethod
    def none(cls) -> Framing:
        """No overhead at all: payload bytes only (the closed-form tests' setting)."""
        return cls(0, False, False)

    def wire_size(self, payload: int, phase: int = 0) -> int:
        """Bytes on the wire of one message with ``payload`` bytes in a phase whose name has
        ``phase`` UTF-8 bytes."""
        size = payload + (self.record + phase if self.record else 0)
        if self.batched:
            share = float(size)
            if self.tls:
                share *= 1 + TLS_RECORD_OVERHEAD / TLS_RECORD
            if self.tcp:
                share *= 1 + TCP_IP_HEADERS / TCP_MSS
            return round(share)
        if self.tls:
            size += -(-size // TLS_RECORD) * TLS_RECORD_OVERHEAD if size else TLS_RECORD_OVERHEAD
        if self.tcp:
            size += max(1, -(-size // TCP_MSS)) * TCP_IP_HEADERS
        return size
