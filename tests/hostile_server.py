"""A local server that misbehaves on purpose, one mode at a time.

Modes, for both ``GET /v1/models`` (where ``on_models`` is set) and ``POST
/v1/chat/completions``:

- ``redirect`` — 307 to the same path on ``other`` (another origin, see :class:`Recorder`);
- ``drip_body`` — a correct reply whose body comes a byte at a time, slowly;
- ``drip_headers`` — the status line and headers a byte at a time, slowly;
- ``endless`` — a chunked body that never ends;
- ``html`` — HTTP 200 with a web page;
- ``list_content`` — a correct answer whose ``content`` is a list of text parts;
- ``oversize`` — a correct reply padded past any sane size (``oversize_bytes``);
- ``gzip_bomb`` — HTTP 200 with ``Content-Encoding: gzip``: ~1 MB on the wire that is
  ``bomb_bytes`` (1 GiB by default) once decompressed;
- ``latin1`` — a correct reply whose body is Latin-1, not UTF-8 (an ``é`` in the answer);
- ``lone_surrogate`` — a correct reply whose reasoning escapes half a surrogate pair (``"\\ud83d"``:
  an emoji cut), as Python's ``json.dumps`` writes one;
- ``shape`` — HTTP 200 whose body is a completion reshaped as ``shape`` names (:data:`SHAPES`):
  no readable message. It carries the request's ``Authorization`` header back (``echo``), as a
  careless proxy might.

Every request's headers are kept in ``headers_seen``. Bounded: each misbehaviour stops
after ``max_s`` seconds or when the client goes away.
"""

from __future__ import annotations

import asyncio
import functools
import json
import zlib

from .fake_server import majority_answer
from .local_server import LocalServer


def _no_message(reply: dict) -> None:
    del reply["choices"][0]["message"]


#: Completions that are no model's answer: each changes a correct reply in place.
SHAPES = {
    "no_message": _no_message,
    "null_message": lambda r: r["choices"][0].update(message=None),
    "text_message": lambda r: r["choices"][0].update(message="even_number"),
    "number_content": lambda r: r["choices"][0]["message"].update(content=42),
    "object_content": lambda r: r["choices"][0]["message"].update(content={"answer": "even_number"}),
    "usage_list": lambda r: r.update(usage=[{"prompt_tokens": 10}]),
}


@functools.cache
def gzip_bomb(size: int) -> bytes:
    """A gzip stream of a JSON object padded to ``size`` bytes (about 1,000:1), made once."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(b'{"pad": "')]
    block = b"x" * 2**20
    for _ in range(size // len(block)):
        parts.append(packer.compress(block))
    parts.append(packer.compress(b'"}') + packer.flush())
    return b"".join(parts)


class Recorder(LocalServer):
    """Another origin: answers everything like a plain server and keeps what it was sent."""

    async def route(self, method: str, path: str, body: bytes, writer, reader=None) -> bool:
        payload = b'{"object": "list", "data": [{"id": "fake-model"}]}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))
        await writer.drain()
        return True


class HostileServer(LocalServer):
    def __init__(self, mode: str, other: Recorder | None = None, on_models: bool = False, max_s: float = 20.0,
                 oversize_bytes: int = 3 * 2**20, shape: str | None = None, bomb_bytes: int = 2**30):
        super().__init__()
        self.mode, self.other, self.on_models, self.max_s, self.oversize_bytes = mode, other, on_models, max_s, oversize_bytes
        self.shape, self.bomb_bytes = shape, bomb_bytes
        self.chats = 0  # chat requests answered

    async def route(self, method: str, path: str, body: bytes, writer, reader=None) -> bool:
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
        self.chats += 1
        if self.mode == "gzip_bomb":
            packed = gzip_bomb(self.bomb_bytes)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(packed))
            writer.write(packed)
            await writer.drain()
            return True
        if self.mode == "latin1":
            reply["choices"][0]["message"]["content"] += " (réponse)"
            payload = json.dumps(reply, ensure_ascii=False).encode("latin-1")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(payload), payload))
            await writer.drain()
            return True
        if self.mode == "lone_surrogate":
            reply["choices"][0]["message"]["reasoning"] = "Counting \ud83d every instance."
        if self.mode == "shape":
            SHAPES[self.shape](reply)
            reply["echo"] = self.headers_seen[-1].get("authorization")
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
