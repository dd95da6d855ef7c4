"""The two ways :mod:`mip.models.openai_compat` posts a chat-completions body (``model.transport``).

- ``aiohttp`` (default): mip's own lean client. Each body is JSON-encoded once (orjson) and
  posted on a pooled aiohttp connection; the proxy variables (``HTTPS_PROXY``, ``NO_PROXY``,
  …) are read once. Its CPU cost per request is a fraction of the SDK's
  (benchmarks/RESULTS.md), which is what lets one process keep hundreds of long requests in
  flight.
- ``openai``: the ``openai`` SDK's async client, for comparison or for a server whose quirks
  only the SDK handles. Its own retries are off.

Both only send: one try, redirects not followed, the reply read raw and capped at
``max_response_bytes`` after decompression (a gzip bomb fails as an infrastructure failure).
Retries, deadlines and what a reply means are the backend's (:mod:`mip.models.outcomes`, the
guard of :mod:`mip.models.calls`), the same for both. Each makes
its client on first use, inside the backend's event loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import orjson
from yarl import URL

import mip
from mip.config import ModelConfig
from mip.models.base import BackendSetupError
from mip.models.safe_http import ReplyTooLarge, credentials, endpoint

Reply = tuple[int, Mapping[str, str], bytes]
"""HTTP status, headers and the raw body."""


class Transport(Protocol):
    def encode(self, body: dict[str, Any]) -> Any:
        """The body as :meth:`send` takes it (encoded in the caller's thread, not the loop's)."""

    async def send(self, body: Any) -> Reply:
        """Post one body; raise ReplyTooLarge past ``max_response_bytes``."""

    async def open(self) -> None:
        """Make the client now, in the event loop, rather than at the first send."""

    async def close(self) -> None:
        """Close the client; a later send makes a new one."""


def proxy_for(url: str | URL) -> dict[str, Any]:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``, …) sets for ``url``, as
    request arguments; read once per session, since aiohttp's ``trust_env`` would look it
    up on every request (about 1 ms of CPU each)."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


class AiohttpTransport:
    """mip's own client: orjson bodies on a pooled aiohttp session."""

    def __init__(self, cfg: ModelConfig, root: str, api_key: str):
        self.cfg, self._root, self._api_key = cfg, root, api_key
        self._session: Any = None
        self._proxy: dict[str, Any] = {}

    def encode(self, body: dict[str, Any]) -> bytes:
        return orjson.dumps(body)

    def _open(self) -> Any:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.cfg.max_concurrency),
                headers={"Authorization": credentials(self.cfg.base_url, self._api_key)[1],
                         "Content-Type": "application/json", "User-Agent": f"mip/{mip.__version__}"},
                timeout=aiohttp.ClientTimeout(total=self.cfg.request_timeout_s),
            )
            self._url = URL(endpoint(self._root, "chat/completions"))  # parsed once, not per request
            self._proxy = proxy_for(self._url)
        return self._session

    async def open(self) -> None:
        self._open()

    async def send(self, body: bytes) -> Reply:
        """Post one body, read the reply (capped); redirects are not followed."""
        session = self._open()
        async with session.post(self._url, data=body, allow_redirects=False, **self._proxy) as response:
            limit = self.cfg.max_response_bytes
            # Content-Length counts the bytes on the wire; a compressed reply (Content-Encoding:
            # gzip) holds up to ~1000× that once decompressed. So the body is counted as it is
            # decompressed, chunk by chunk (aiohttp decompresses a bounded amount per chunk),
            # never read whole first.
            if response.content_length is not None and response.content_length > limit:
                raise ReplyTooLarge(response.content_length, limit)
            raw = bytearray()
            async for chunk in response.content.iter_any():
                raw += chunk
                if len(raw) > limit:
                    raise ReplyTooLarge(None, limit)
            return response.status, response.headers, bytes(raw)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._session = None


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as e:  # pragma: no cover - openai is a base dependency
        raise BackendSetupError("transport: openai needs `pip install openai`.") from e
    return openai


class SdkTransport:
    """The ``openai`` SDK: its retries off and redirects not followed; the reply is read raw,
    capped, and parsed like aiohttp's."""

    def __init__(self, cfg: ModelConfig, root: str, api_key: str):
        self.cfg, self._api_key = cfg, api_key
        self._client: Any = None

    def encode(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    async def open(self) -> None:
        if self._client is None:
            openai = _import_openai()
            self._client = openai.AsyncOpenAI(
                base_url=self.cfg.base_url, api_key=self._api_key, max_retries=0, timeout=self.cfg.request_timeout_s,
                http_client=openai.DefaultAsyncHttpxClient(follow_redirects=False, timeout=self.cfg.request_timeout_s))

    async def send(self, body: dict[str, Any]) -> Reply:
        openai = _import_openai()
        await self.open()
        body = dict(body)
        named = {"model": body.pop("model"), "messages": body.pop("messages")}
        try:
            create = self._client.chat.completions.with_streaming_response.create
            async with create(**named, extra_body=body) as response:
                raw = bytearray()
                async for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > self.cfg.max_response_bytes:
                        raise ReplyTooLarge(None, self.cfg.max_response_bytes)
                return response.http_response.status_code, response.headers, bytes(raw)
        except openai.APIStatusError as e:
            try:
                raw = e.response.content
            except Exception:  # noqa: BLE001 - a body the SDK did not read
                raw = json.dumps({"error": {"message": e.message}}).encode()
            return e.status_code, e.response.headers, raw

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
        self._client = None


#: ``model.transport`` names and their transports.
TRANSPORTS: dict[str, type[AiohttpTransport] | type[SdkTransport]] = {"aiohttp": AiohttpTransport,
                                                                       "openai": SdkTransport}
