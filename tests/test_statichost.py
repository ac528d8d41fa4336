"""The static host the browser tests serve built sites with."""

from __future__ import annotations

import functools
import socket
import struct
import threading

from generator.serve.statichost import StaticHostHandler, StaticHostServer


def test_a_client_that_goes_away_is_not_reported(tmp_path, capsys):
    """A browser that cancels a request leaves the server writing to a closed connection; the
    server must not print a traceback for it (it would land in whatever runs at that moment: with
    the servers alive for the whole session, in another test's captured output)."""
    (tmp_path / "big.bin").write_bytes(b"x" * 20_000_000)  # more than the socket buffers hold
    server = StaticHostServer(("127.0.0.1", 0), functools.partial(StaticHostHandler, directory=str(tmp_path)))
    server.daemon_threads = False  # so that closing the server waits for the request's thread
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        client = socket.create_connection(server.server_address[:2], timeout=5)
        client.sendall(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
        client.recv(1)  # the answer has begun
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a reset, not an orderly close
    finally:
        server.shutdown()
        server.server_close()  # joins the request's thread: its error, if any, is printed by now
        thread.join(10)
    assert "Traceback" not in capsys.readouterr().err
