"""The lifecycle and HTTP reading that the tests' local servers share: a thread of its own
with an asyncio server on 127.0.0.1 (a free port), keep-alive requests read one after
another, each handed to ``route``; ``with Server() as s: s.base_url``.

Subclasses: :class:`tests.fake_server.FakeServer` (a correct server that injects faults) and
those of :mod:`tests.hostile_server` (servers that misbehave on purpose).
"""

from __future__ import annotations

import asyncio
import threading


class LocalServer:
    def __init__(self) -> None:
        self.headers_seen: list[dict[str, str]] = []
        self.targets_seen: list[str] = []  # each request's target, query included
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def __enter__(self):
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter,
                    reader: asyncio.StreamReader) -> bool:
        """Answer one request; False closes the connection."""
        raise NotImplementedError

    def started(self) -> None:
        """Called in the server's loop before it listens (for a subclass's asyncio objects)."""

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self.started()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                with self._lock:
                    self.headers_seen.append(headers)
                    self.targets_seen.append(path)
                path = path.partition("?")[0]  # a query (a key as ?key=…) is seen in targets_seen
                if not await self.route(method, path, body, writer, reader):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
