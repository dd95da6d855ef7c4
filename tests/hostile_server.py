"""A local server that misbehaves on purpose (issue 19), one mode at a time.

Modes, for both ``GET /v1/models`` (where ``on_models`` is set) and ``POST
/v1/chat/completions``:

- ``redirect`` — 307 to the same path on ``other`` (another origin, see :class:`Recorder`);
- ``drip_body`` — a correct reply whose body comes a byte at a time, slowly;
- ``drip_headers`` — the status line and headers a byte at a time, slowly;
- ``endless`` — a chunked body that never ends;
- ``html`` — HTTP 200 with a web page;
- ``list_content`` — a correct answer whose ``content`` is a list of text parts;
- ``oversize`` — a correct reply padded past any sane size (``oversize_bytes``).

Every request's headers are kept in ``headers_seen``. Bounded: each misbehaviour stops
after ``max_s`` seconds or when the client goes away.
"""

from __future__ import annotations

import asyncio
import json
import threading

from .fake_server import majority_answer


class _Base:
    def __init__(self) -> None:
        self.headers_seen: list[dict[str, str]] = []
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

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            task.cancel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.headers_seen.append(headers)
                if not await self.route(method, path, body, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def route(self, method: str, path: str, body: bytes, writer) -> bool:
        raise NotImplementedError


class Recorder(_Base):
    """Another origin: answers everything like a plain server and keeps what it was sent."""

    async def route(self, method: str, path: str, body: bytes, writer) -> bool:
        payload = b'{"object": "list", "data": [{"id": "fake-model"}]}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))
        await writer.drain()
        return True


class HostileServer(_Base):
    def __init__(self, mode: str, other: Recorder | None = None, on_models: bool = False, max_s: float = 20.0,
                 oversize_bytes: int = 3 * 2**20):
        super().__init__()
        self.mode, self.other, self.on_models, self.max_s, self.oversize_bytes = mode, other, on_models, max_s, oversize_bytes

    async def route(self, method: str, path: str, body: bytes, writer) -> bool:
        models = method == "GET" and path.endswith("/models")
        if models and not self.on_models:
            await self._json(writer, {"object": "list", "data": [{"id": "fake-model"}]})
            return True
        if self.mode == "redirect":
            location = f"http://127.0.0.1:{self.other.port}{path}"
            writer.write(f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())
            await writer.drain()
            return True
        reply = ({"object": "list", "data": [{"id": "fake-model"}]} if models
                 else self._completion(json.loads(body)["messages"][-1]["content"]))
        payload = json.dumps(reply).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        if self.mode == "drip_body":
            writer.write(head)
            await self._drip(writer, payload)
            return False
        if self.mode == "drip_headers":
            await self._drip(writer, head + payload)
            return False
        if self.mode == "endless":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b'{"pad": "' + b"x" * 65_000
            deadline = self._loop.time() + self.max_s
            while self._loop.time() < deadline and not writer.is_closing():
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                await asyncio.sleep(0.001)
            return False
        if self.mode == "html":
            page = b"<!doctype html><html><body>Welcome to nginx!</body></html>"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(page), page))
            await writer.drain()
            return True
        if self.mode == "oversize":
            reply["padding"] = "x" * self.oversize_bytes
        await self._json(writer, reply)
        return True

    async def _drip(self, writer, data: bytes) -> None:
        deadline = self._loop.time() + self.max_s
        for i in range(len(data)):
            if self._loop.time() > deadline or writer.is_closing():
                return
            writer.write(data[i:i + 1])
            await writer.drain()
            await asyncio.sleep(0.25)

    async def _json(self, writer, reply: dict) -> None:
        payload = json.dumps(reply).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))
        await writer.drain()

    def _completion(self, prompt: str) -> dict:
        answer = majority_answer(prompt)
        text = json.dumps({"answer": answer if answer != "-1" else -1})
        content = ([{"type": "text", "text": "Counting every instance."}, {"type": "text", "text": text}]
                   if self.mode == "list_content" else text)
        return {"id": "x", "object": "chat.completion", "model": "fake-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
