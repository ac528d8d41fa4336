"""How ``labs serve`` keeps answering under a flood of slow or long-lived connections.

Every connection is a thread, and there are two kinds, each capped on its own:

- **request slots** (``max_connections``): a connection waiting for, reading or answering a
  request. A request (its line and headers) must arrive whole within ``request_timeout`` of
  the moment the server started waiting for it, however slowly its bytes trickle in; a
  connection that takes longer is closed. When every slot is taken, a new connection takes
  the slot of the one that has been waiting longest for its request to arrive (a slow
  sender, or a browser's idle keep-alive connection, which simply opens another), so a
  normal request is answered even while slow senders hold every slot.
- **event-stream slots** (``max_streams``): a live-reload stream, which stays open as long
  as its page does. It gives back its request slot when it starts, so open pages never
  lock out requests; beyond the cap a new stream is answered 503. A stream checks every
  :data:`STREAM_CHECK_SECONDS` whether its page went away, and ends when it did.
"""

from __future__ import annotations

import io
import select
import socket
import threading
import time
from http.server import ThreadingHTTPServer

STREAM_CHECK_SECONDS = 0.25  # how soon a closed event stream gives back its slot
STOP_JOIN_SECONDS = 2.0  # server_close waits at most this long for connection threads


class _Conn:
    """One connection: its socket, thread, state and the deadline for its current request."""

    __slots__ = ("sock", "thread", "state", "deadline", "since")

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.thread = sock, None
        self.state = "head"  # "head": waiting for a request; "busy": answering; "stream"; "gone"
        self.deadline: float | None = None
        self.since = time.monotonic()


class _DeadlineReader(io.RawIOBase):
    """Reads the socket, but never past the connection's deadline for its current request."""

    def __init__(self, conn: _Conn, idle: float) -> None:
        self.conn, self.idle = conn, idle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        deadline = self.conn.deadline
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            self.conn.sock.settimeout(min(left, self.idle))
        return self.conn.sock.recv_into(buffer)


def peer_gone(sock: socket.socket) -> bool:
    """Whether the client of an event stream closed it (or sent something, which no event-stream
    client does): its socket turned readable."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class LimitedHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server with request slots and event-stream slots (see the module)."""

    daemon_threads = True

    def __init__(self, address, handler, max_connections: int, max_streams: int, request_timeout: float):
        self.max_connections, self.max_streams = max_connections, max_streams
        self.request_timeout = request_timeout
        self._lock = threading.Lock()
        self._conns: dict[socket.socket, _Conn] = {}
        self.streams_refused = 0  # event streams answered 503 (the pages ask again later)
        super().__init__(address, handler)

    # -- counting --------------------------------------------------------------------------
    def counts(self) -> tuple[int, int]:
        """(connections holding a request slot, open event streams)."""
        with self._lock:
            states = [c.state for c in self._conns.values()]
        return sum(s in ("head", "busy") for s in states), states.count("stream")

    def _evict_one(self) -> bool:
        """Close the connection waiting longest for its request; False if none is waiting."""
        waiting = [c for c in self._conns.values() if c.state == "head"]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.since)
        oldest.state = "gone"
        try:
            oldest.sock.shutdown(socket.SHUT_RDWR)  # its thread's read returns at once
        except OSError:
            pass
        return True

    def process_request(self, request, client_address) -> None:
        with self._lock:
            held = sum(c.state in ("head", "busy") for c in self._conns.values())
            if held >= self.max_connections and not self._evict_one():
                self.shutdown_request(request)  # every slot is answering a request right now
                return
            conn = self._conns[request] = _Conn(request)
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name="labs-http-conn", daemon=True)
        conn.thread = thread
        try:
            thread.start()
        except BaseException:
            self._forget(request)
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)

    def _forget(self, request) -> None:
        with self._lock:
            self._conns.pop(request, None)

    # -- what handlers call ------------------------------------------------------------------
    def conn(self, request) -> _Conn | None:
        with self._lock:
            return self._conns.get(request)

    def become_stream(self, request) -> bool:
        """Move a connection from its request slot to an event-stream slot; False when full."""
        with self._lock:
            conn = self._conns.get(request)
            if conn is None or sum(c.state == "stream" for c in self._conns.values()) >= self.max_streams:
                self.streams_refused += 1
                return False
            conn.state = "stream"
            return True

    def server_close(self) -> None:
        """Stop listening, close every open connection and wait (briefly) for their threads."""
        super().server_close()
        with self._lock:
            conns = list(self._conns.values())
        for conn in conns:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + STOP_JOIN_SECONDS
        for conn in conns:
            if conn.thread is not None and conn.thread is not threading.current_thread():
                conn.thread.join(max(0.0, deadline - time.monotonic()))


class LimitedHandlerMixin:
    """For a BaseHTTPRequestHandler of a :class:`LimitedHTTPServer`: reads a request under its deadline."""

    server: LimitedHTTPServer
    _conn: _Conn | None = None

    def setup(self) -> None:
        self.timeout = self.server.request_timeout  # set on the socket: no idle connection forever
        super().setup()
        self._conn = self.server.conn(self.request)
        if self._conn is not None:
            self.rfile = io.BufferedReader(_DeadlineReader(self._conn, self.server.request_timeout))

    def handle_one_request(self) -> None:
        conn = self._conn
        if conn is not None:
            if conn.state == "gone":
                self.close_connection = True
                return
            with self.server._lock:
                if conn.state == "gone":
                    self.close_connection = True
                    return
                conn.state, conn.since = "head", time.monotonic()
                conn.deadline = conn.since + self.server.request_timeout
        super().handle_one_request()

    def parse_request(self) -> bool:
        ok = super().parse_request()
        conn = self._conn
        if conn is not None and conn.state == "head":
            conn.state, conn.deadline = "busy", None  # arrived: answering is bounded by write timeouts
            self.connection.settimeout(self.server.request_timeout)
        return ok
