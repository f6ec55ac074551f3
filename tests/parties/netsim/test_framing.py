"""Wire size per message: the channel's record, TLS 1.3 records, TCP/IP headers."""

from __future__ import annotations

from parties.channel import frame_record, pack_stream
from parties.netsim.framing import Framing
from parties.transport import Frame


def test_measured_record_overhead_is_the_channels() -> None:
    frame = Frame(3, -1, "collect", 7, b"x" * 100)
    on_stream = len(pack_stream([frame_record(frame)]))
    assert Framing.measured().record == on_stream - 100 - len("collect") == 20


def test_wire_size_worked_examples() -> None:
    f = Framing(20)
    assert f.wire_size(100, 7) == 100 + 27 + 22 + 52  # one TLS record, one segment
    # 20,027 bytes: two TLS records (+44) -> 20,071 bytes in 14 segments of 1,448 (+728)
    assert f.wire_size(20_000, 7) == 20_799
    assert Framing(20, tls=False, tcp=False).wire_size(100, 7) == 127
    assert Framing.none().wire_size(100, 7) == 100
