"""Attacks on the ``tcp`` runtime: abuse of the controller's port (no or a foreign client
certificate, an authenticated worker sending junk or speaking for parties it does not host) and
a controller equivocating between two worker processes — each fails, and none ends the run.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from parties.runtime import HostingPlan
from parties.tcp import TcpRuntime
from parties.transport import CONTROLLER

pytestmark = pytest.mark.process


async def _abuse(tmp_path, client, n: int = 4):  # type: ignore[no-untyped-def]
    """A TcpHosting of ``n`` parties serving one expected worker (parties 0-3) over mutual TLS, in
    this process; ``client(port, material)`` plays the attacker.  Returns the hosting once every
    connection the server accepted has been served to its end (none may raise)."""
    import asyncio

    from mprr.data import Attribute, Schema
    from parties.runtime import HostingPlan
    from parties.simulate import PARTY_KINDS
    from parties.tcp import TcpHosting
    from parties.tls import make_material, server_context

    schema = Schema((Attribute("a", ("x", "y"), "nominal"),))
    plan = HostingPlan(n=n, schema=schema, records=np.zeros((n, 1), dtype=int), seed=1,
                       budgets=(float("inf"),) * n, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS))
    material = make_material(tmp_path / "run", 1)
    hosting = TcpHosting(plan, tls=True, expected=[range(4)])
    served: list[asyncio.Task[None]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        served.append(task)
        await hosting.serve(reader, writer)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_context(material))
    async with server:
        await client(server.sockets[0].getsockname()[1], material)
        await asyncio.sleep(0.2)
        await asyncio.gather(*served)
    return hosting


async def _send_as_worker_0(port: int, material, data: bytes, *, read: bool = False) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from parties.tls import client_context

    ctx = client_context(material.ca, material.cert("worker-0"), material.key("worker-0"))
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="127.0.0.1")
    writer.write(data)
    await writer.drain()
    if read:
        await asyncio.wait_for(reader.read(1 << 16), 5)
    writer.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("certificate", ["none", "foreign"])
async def test_a_client_without_the_runs_certificate_never_reaches_the_hosting(tmp_path, certificate: str) -> None:  # type: ignore[no-untyped-def]
    import asyncio
    import ssl

    from parties.tls import make_material

    async def client(port: int, material) -> None:  # type: ignore[no-untyped-def]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(material.ca)
        if certificate == "foreign":  # a worker certificate of another run's CA
            other = make_material(tmp_path / "other", 1)
            ctx.load_cert_chain(other.cert("worker-0"), other.key("worker-0"))
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="127.0.0.1")
            writer.write(b"\x00\x00\x00\x01x")
            await writer.drain()
            if not await asyncio.wait_for(reader.read(1), 5):
                raise ConnectionError("closed by the controller")

    hosting = await _abuse(tmp_path, client)
    assert hosting.links == [] and hosting.problems == []  # refused in the handshake, before serve


@pytest.mark.timeout(60)
@pytest.mark.parametrize("attack", ["garbage", "4 GiB length prefix", "cut frame"])
async def test_an_authenticated_worker_sending_junk_is_dropped_not_the_run(tmp_path, attack: str) -> None:  # type: ignore[no-untyped-def]
    from parties.channel import dumps, pack_stream

    hello = pack_stream([dumps("hello", {"worker": 0, "parties": (0, 4)})])
    data = {
        "garbage": b"\x00\x00\x00\x10" + bytes(range(16)),
        "4 GiB length prefix": b"\xff\xff\xff\xff" + b"x" * 64,
        "cut frame": hello + b"\x00\x00\x01\x00" + b"\x01" * 40,  # a 256-byte record cut at 40
    }[attack]

    async def client(port: int, material) -> None:  # type: ignore[no-untyped-def]
        await _send_as_worker_0(port, material, data, read=attack == "cut frame")

    hosting = await _abuse(tmp_path, client)
    if attack == "cut frame":  # the worker was accepted, then lost: its parties crash, nothing raised
        (link,) = hosting.links
        assert link.done.is_set() and link.report is None
        assert set(hosting.router.lost.values()) == {"connection closed"}
    else:
        assert hosting.links == []
        why = "not a control record" if attack == "garbage" else "record length 4294967295 exceeds the limit"
        assert len(hosting.problems) == 1 and re.search(why, hosting.problems[0]), hosting.problems


@pytest.mark.timeout(60)
async def test_a_worker_speaking_for_parties_it_does_not_host_is_refused_not_dropped(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Worker 0 hosts parties 0-3 and sends reply columns for parties 4-11, then a malformed
    columns record, then its own parties' columns: the first two are rejected (counted and
    noted), the worker stays connected and its own replies are counted."""
    from parties.channel import COLUMNS, dumps, pack_stream
    from parties.cohort import ReplyLayout
    from parties.wire.codec import encode

    def block(srcs: list[int]) -> bytes:
        codes = np.ones((len(srcs), 2), dtype=np.int64)
        codes.flags.writeable = False
        wire = ReplyLayout.of(1, codes).columns(np.array(srcs), "collect", slice(0, len(srcs))).wire()
        assert wire is not None
        return bytes((COLUMNS,)) + encode(wire)

    data = pack_stream([dumps("hello", {"worker": 0, "parties": (0, 4)}), block(list(range(4, 12))),
                        block([0, 1, 2, 3])[:-1], block([0, 1, 2, 3])])

    async def client(port: int, material) -> None:  # type: ignore[no-untyped-def]
        await _send_as_worker_0(port, material, data)

    hosting = await _abuse(tmp_path, client, n=12)
    (link,) = hosting.links
    stats = hosting.router.statistics()
    assert stats.rejected == 8 + 1 and len(hosting.problems) == 1 and "reply columns rejected" in hosting.problems[0]
    assert stats.messages == 4 and sorted(stats.by_sender) == [0, 1, 2, 3]  # its own parties' replies only
    assert sorted(env.src for env in hosting.router.endpoint(-1).pending()) == [0, 1, 2, 3]


@pytest.mark.timeout(90)
def test_equivocation_isolating_one_party_fails_on_tcp() -> None:
    """Issue 25, attack 1 on tcp (one worker): the victim asked ``exact=True``, the others a
    constant matrix under one controller session id; the victim's agreed session never
    completes (the memory tests run both sessions on every engine)."""
    import asyncio

    from mprr.data import Attribute, Schema
    from mprr.errors import ProtocolError
    from parties.transport import CONTROLLER
    from parties.secure.agreement import agreed_session, request_digest
    from parties.secure.graph import GraphEngine
    from parties.simulate import PARTY_KINDS
    from parties.wire.messages import Ack
    from tests.parties.secure.test_agreement import CONSTANT, _release

    n, victim = 5, 0
    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y"), "nominal") for j in range(2)))
    engine = GraphEngine(round_timeout=1.0)
    plan = HostingPlan(n=n, schema=schema, records=np.array([(i % 2, (i // 2) % 2) for i in range(n)]), seed=7,
                       budgets=(math.inf,) * n, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS), engine=engine, min_roster=3,
                       timeout=2.0)
    asked, decoy = _release(True), _release(False, CONSTANT)
    from parties.wire.requests import SecureSumStart

    start = SecureSumStart(1, "s", engine.name, ((0, n),))
    session = agreed_session(request_digest(asked), start)

    async def main() -> None:
        async with TcpRuntime(workers=1, tls=False).host(plan) as hosting:
            ep = hosting.router.endpoint(CONTROLLER)
            for p in range(n):
                await ep.send(p, asked if p == victim else decoy, phase="dependence")
            assert len(await ep.gather(range(n), kinds=(Ack,), phase="dependence", timeout=10.0)) == n
            await ep.broadcast(range(n), start, phase="dependence")
            with pytest.raises(ProtocolError):
                await engine.controller(ep, engine.context(range(n), 4, network=hosting.router, session=session))
            await hosting.finish()

    asyncio.run(main())
