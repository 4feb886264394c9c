"""A webhook endpoint for tests of the HTTP hooks: a small server on 127.0.0.1, in a thread of the test's process."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class HookReceiver:
    """Records each POST as (its JSON body, its headers) in `received`, and answers it with the next status of
    `answers`, once those are used up with `status`; each answer's body is `body`. `url` is a path on it; call
    `close()`, or use it as `with HookReceiver() as receiver:`."""

    def __init__(self, status: int = 204, body: bytes = b""):
        self.received: list[tuple[dict, dict]] = []
        self.answers: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server calls
                request = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((json.loads(request), dict(self.headers)))
                self.send_response(receiver.answers.pop(0) if receiver.answers else status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.port}/schema-changes"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
