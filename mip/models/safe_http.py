"""Small HTTP rules that keep a hostile server from hurting a job: a size cap on replies, one
deadline over a whole exchange, the API key kept to its origin on redirects, and a base URL's
``user:password@`` sent as HTTP Basic authentication, never as part of the address.

>>> origin("https://api.example.org:8443/v1/chat/completions"), origin("http://localhost/v1")
(('https', 'api.example.org', 8443), ('http', 'localhost', 80))
"""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Callable
from typing import Any

from yarl import URL

import mip
from mip.models.base import BackendSetupError


def endpoint(root: str, path: str, drop: str = "") -> str:
    """The URL of ``path`` under an API root that may carry a query (a key as ``?key=…``): the
    path goes before the query, which every request keeps; ``drop`` is a last path segment to
    leave out first (``/v1`` for vLLM's ``/tokenize``).

    >>> endpoint("https://host/v1?key=K", "chat/completions"), endpoint("http://h:8000/v1/", "tokenize", drop="/v1")
    ('https://host/v1/chat/completions?key=K', 'http://h:8000/tokenize')
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(root)
    base = parts.path.rstrip("/").removesuffix(drop) if drop else parts.path.rstrip("/")
    return urlunsplit(parts._replace(path=f"{base}/{path}"))


def credentials(base_url: str, api_key: str) -> tuple[str, str]:
    """The address to send to and its ``Authorization`` header: the API key as a bearer token;
    or, where the URL holds ``user:password@``, those as HTTP Basic authentication, as the
    ``openai`` SDK's client (httpx) sends them, in place of the key (a request carries one such
    header), and the address without them.

    >>> credentials("https://host/v1", "sk-1")
    ('https://host/v1', 'Bearer sk-1')
    >>> credentials("http://mip:pa%2455@127.0.0.1:8000/v1?key=K", "EMPTY")
    ('http://127.0.0.1:8000/v1?key=K', 'Basic bWlwOnBhJDU1')
    """
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(base_url)
    if "@" not in parts.netloc:
        return base_url, f"Bearer {api_key}"
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    address = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return address, "Basic " + base64.b64encode(pair.encode()).decode("ascii")


class ReplyTooLarge(RuntimeError):
    def __init__(self, size: int | None, limit: int):
        of = f" of {size:,} bytes" if size else ""
        super().__init__(f"a reply{of} over model.max_response_bytes "
                         f"({limit:,}); raise the limit if such replies are expected")


class SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin the API key is for."""

    def __init__(self, url: str):
        self.origin = origin(url)

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        if origin(newurl) != self.origin:
            raise BackendSetupError(f"{req.full_url} redirects to another origin ({newurl}); mip does not send the API "
                                    "key there. Set model.base_url to the server that answers.")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def origin(url: str) -> tuple[str, str, int | None]:
    parsed = URL(url)
    return parsed.scheme, parsed.host or "", parsed.port


def read_capped(response: Any, limit: int) -> bytes:
    with response:
        raw = response.read(limit + 1)
    if len(raw) > limit:
        raise ReplyTooLarge(None, limit)
    return raw


def with_deadline(work: Callable[[], bytes], seconds: float, why: str) -> bytes:
    """``work()`` in a daemon thread, waited for at most ``seconds`` (urllib's own timeout
    bounds each socket read, not the whole exchange: a dripping server would pass it)."""
    result: list = []

    def run() -> None:
        try:
            result.append((True, work()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            result.append((False, e))

    thread = threading.Thread(target=run, name="mip-check", daemon=True)
    thread.start()
    thread.join(seconds)
    if not result:
        raise BackendSetupError(why)
    ok, value = result[0]
    if not ok:
        if isinstance(value, ReplyTooLarge):
            raise BackendSetupError(str(value)) from None
        raise value
    return value


def small_request(url: str, authorization: str, deadline_s: float, max_bytes: int, body: bytes | None = None) -> bytes:
    """One small request of a backend's own (a model listing, token counts), under these rules:
    the key goes to ``url``'s origin only, the reply is capped at ``max_bytes`` and the whole
    exchange has one deadline. A JSON ``body`` makes it a POST."""
    request = urllib.request.Request(url, data=body, headers={
        "Authorization": authorization, "User-Agent": f"mip/{mip.__version__}",
        **({"Content-Type": "application/json"} if body is not None else {})})
    opener = urllib.request.build_opener(SameOrigin(url))  # proxies as set now
    return with_deadline(lambda: read_capped(opener.open(request, timeout=deadline_s), max_bytes),
                         deadline_s, f"{url} did not answer completely within {deadline_s:g} s")
