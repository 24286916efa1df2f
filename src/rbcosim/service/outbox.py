"""Replies queued per client, bounded in bytes as well as in count.

ZeroMQ bounds a ROUTER's queue per peer in messages only (its high-water mark), so a client
that never reads would make the server hold ``send_hwm`` replies of any size. Here ZeroMQ
keeps at most `PIPE_HWM` messages per peer (`ZMQ_ROUTER_MANDATORY` reports a full queue
instead of dropping silently); what does not fit waits in an `Outbox` queue of that client,
at most ``max_bytes`` bytes (plus the one reply that opens an empty queue, whatever its size)
and ``max_messages`` replies. Beyond that a client's replies are dropped and counted, and a
client that has vanished loses its queue.
"""

from __future__ import annotations

import logging
from collections import deque

import zmq

log = logging.getLogger("rbcosim.service")

PIPE_HWM = 2  # messages ZeroMQ itself queues per peer; the rest waits here, counted in bytes


class Outbox:
    """Send ``[identity, *frames]`` messages on a ROUTER `socket` without blocking; queue
    what its peer's pipe cannot take yet, within ``max_bytes`` and ``max_messages``."""

    def __init__(self, socket: zmq.Socket, max_bytes: int, max_messages: int) -> None:
        socket.setsockopt(zmq.SNDHWM, PIPE_HWM)
        socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.socket = socket
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._queues: dict[bytes, deque[list[bytes]]] = {}
        self._bytes: dict[bytes, int] = {}
        self.dropped = 0
        """Replies dropped because their client was over its bound or had vanished."""
        self._warned: set[bytes] = set()  # clients over their bound, logged once until drained

    @property
    def pending(self) -> bool:
        """Whether some client has queued replies (the loop should call `flush` soon)."""
        return bool(self._queues)

    def queued_bytes(self, identity: bytes) -> int:
        return self._bytes.get(identity, 0)

    def send(self, frames: list) -> None:
        """Send or queue one message; frames: bytes or buffers (views of arrays, copied when
        the message has to wait)."""
        identity = frames[0]
        queue = self._queues.get(identity)
        if queue is None:
            try:
                self.socket.send_multipart(frames, zmq.NOBLOCK)
                return
            except zmq.Again:
                queue = self._queues[identity] = deque()
            except zmq.ZMQError as exc:  # the peer is gone
                self._drop(identity, f"reply dropped: {exc}")
                return
        frames = [bytes(f) for f in frames]  # a queued reply must not share an array's memory
        size = sum(len(f) for f in frames)
        held = self._bytes.get(identity, 0)
        if queue and (held + size > self.max_bytes or len(queue) >= self.max_messages):
            self._drop(identity, f"reply of {size} bytes dropped: the client holds {len(queue)} "
                       f"unread replies, {held} bytes (serve --send-bytes/--send-hwm)")
            return
        queue.append(frames)
        self._bytes[identity] = held + size

    def flush(self) -> None:
        """Hand queued replies to ZeroMQ as far as each peer's pipe takes them."""
        for identity, queue in list(self._queues.items()):
            while queue:
                try:
                    self.socket.send_multipart(queue[0], zmq.NOBLOCK)
                except zmq.Again:
                    break
                except zmq.ZMQError as exc:
                    self.dropped += len(queue)
                    log.warning("%d replies dropped: %s", len(queue), exc)
                    queue.clear()
                    break
                self._bytes[identity] -= sum(len(f) for f in queue.popleft())
            if not queue:
                del self._queues[identity]
                self._bytes.pop(identity, None)
                self._warned.discard(identity)

    def _drop(self, identity: bytes, why: str) -> None:
        self.dropped += 1
        if identity not in self._warned:
            self._warned.add(identity)
            log.warning("%s (further replies to this client are dropped silently until it "
                        "reads)", why)
