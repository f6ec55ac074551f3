"""Wire size per message: the channel's record, TLS 1.3 records, TCP/IP headers."""

from __future__ import annotations

import ssl
from pathlib import Path

from parties.channel import frame_record, pack_stream
from parties.netsim.framing import TLS_RECORD, TLS_RECORD_OVERHEAD, Framing
from parties.tls import CONTROLLER_NAME, client_context, make_material, server_context
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


def test_tls_record_overhead_is_the_tcp_runtimes_measured_one(tmp_path: Path) -> None:
    # a TLS 1.3 session with the tcp runtime's own contexts, in memory: what a write of N bytes
    # puts on the wire is N + 22 bytes per started 16 KiB record
    material = make_material(tmp_path, 1)
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = server_context(material).wrap_bio(s_in, s_out, server_side=True)
    client = client_context(material.ca, material.cert("worker-0"), material.key("worker-0")).wrap_bio(
        c_in, c_out, server_hostname=CONTROLLER_NAME)
    done: set[str] = set()
    for _ in range(10):  # handshake: pump bytes both ways until both ends are done
        for name, end, out, peer_in in (("client", client, c_out, s_in), ("server", server, s_out, c_in)):
            try:
                end.do_handshake()
                done.add(name)
            except ssl.SSLWantReadError:
                pass
            peer_in.write(out.read())
    assert done == {"client", "server"}
    c_out.read()
    for size in (100, 16_384, 20_000):
        client.write(bytes(size))
        wire = len(c_out.read())
        assert wire - size == -(-size // TLS_RECORD) * TLS_RECORD_OVERHEAD, size
