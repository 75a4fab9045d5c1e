"""A reverse proxy on 127.0.0.1 that passes a client-chosen X-Forwarded-For on, as a careless nginx would.

Chromium sends no extra headers on a websocket handshake, so a browser test cannot forge the header itself.
This proxy writes ``X-Forwarded-For: <address>`` into the head of the first request of every connection
(the websocket's handshake is the first request of its own connection) and then copies bytes both ways.
Streamlit's server sees a connection from 127.0.0.1, which it trusts to name the client.
"""

from __future__ import annotations

import socket
import threading


class ForwardingProxy:
    """Listens on a free port of 127.0.0.1; every connection reaches ``port`` claiming to come from ``address``."""

    def __init__(self, port: int, address: str):
        self.target, self.address = ("127.0.0.1", port), address
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.target)
        head = b""
        while b"\r\n\r\n" not in head:  # the first request's head, to add the header to
            chunk = client.recv(65536)
            if not chunk:
                client.close()
                upstream.close()
                return
            head += chunk
        line_end = head.index(b"\r\n")
        forged = f"\r\nX-Forwarded-For: {self.address}".encode()
        upstream.sendall(head[:line_end] + forged + head[line_end:])
        threading.Thread(target=self._copy, args=(upstream, client), daemon=True).start()
        self._copy(client, upstream)

    @staticmethod
    def _copy(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()
