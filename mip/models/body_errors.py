"""An error object in a 200 reply, read as the HTTP error it names.

OpenRouter answers with the error's own status only for an invalid request or an account out
of credits; once the model started processing the request, "the returned HTTP response status
will be 200 and any error occurred while the LLM is producing the output will be emitted in the
response body" as ``{"error": {"code": N, "message": …}}``
(https://openrouter.ai/docs/api/reference/errors-and-debugging). Read as HTTP ``N``, a 402 or 403
there is a refusal like any other (:mod:`mip.models.fail_fast`), and a 429 or 502 is retried as
one; a body with no such code stays a 200 that is no model's answer.

>>> status_in_body(b'{"choices": [], "error": {"code": 402, "message": "Insufficient credits"}}')
402
>>> status_in_body(b'{"error": {"code": "rate_limit_exceeded"}}'), status_in_body(b'{"choices": []}')
(None, None)
"""

from __future__ import annotations

import orjson


def status_in_body(raw: bytes) -> int | None:
    """The HTTP status (400-599) an error object of a 200 body names in ``error.code`` (a number,
    or digits as text), or None."""
    if b'"error"' not in raw:  # the common answer: one scan, no parse
        return None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)
    return code if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599 else None
