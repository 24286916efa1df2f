"""A client whose requests no connection takes gets a ServiceTimeout naming why, instead of
blocking in send forever (ZeroMQ's DEALER blocks once it has no peer to queue for)."""

from __future__ import annotations

import socket
import threading

import msgpack
import zmq

from rbcosim.client import Client, ServiceTimeout


def _closed_port() -> int:
    """A loopback port nothing listens on (bound by the OS, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sending_past_the_queue_to_no_server_times_out():
    client = Client(f"tcp://127.0.0.1:{_closed_port()}", timeout=0.05)
    outcome: list = []

    def flood():
        try:
            for _ in range(100_000):  # far past ZeroMQ's send queue (SNDHWM 1000)
                client.send("hello")
            outcome.append("all sent")
        except ServiceTimeout as exc:
            outcome.append(exc)

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    thread.join(60)
    try:
        assert not thread.is_alive(), "send blocked"
        (error,) = outcome
        assert isinstance(error, ServiceTimeout)
        assert "cannot send hello to tcp://127.0.0.1:" in str(error)
        assert "within 0.05 s: no connection takes it" in str(error)
        assert "1000 requests unread" in str(error)
    finally:
        if not thread.is_alive():  # a socket is not to be closed under a blocked thread
            client.close_socket()


def test_a_server_that_reads_again_gets_every_request():
    """The fallback send after a full queue delivers: a ROUTER that starts reading late sees
    every request, in order."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.RCVHWM, 10)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    client = Client(f"tcp://127.0.0.1:{port}", timeout=30.0)
    client.socket.setsockopt(zmq.SNDHWM, 10)
    sent = []
    thread = threading.Thread(target=lambda: sent.extend(client.send("hello")
                                                         for _ in range(200)), daemon=True)
    try:
        thread.start()
        got = []
        while len(got) < 200:
            frames = router.recv_multipart()
            got.append(frames)
        thread.join(60)
        ids = [msgpack.unpackb(f[2])["msg_id"] for f in got]
        assert ids == sent
    finally:
        client.close_socket()
        router.close(0)
        ctx.term()
