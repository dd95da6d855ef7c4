"""What one reply of a chat-completions server means for the request that brought it, the same
for both transports (:mod:`mip.models.transports`): a :class:`Completion` to hand back (an
answer, or a final error), or a :class:`Retry` with the wait the ``openai`` SDK's rules give
(:mod:`mip.models.chat_api`). The request guard (:mod:`mip.models.calls`) retries only what
this says to retry; fail fast (:mod:`mip.models.fail_fast`) hears of every reply here.

- A 200 whose body is an error object is the HTTP error it names (:mod:`mip.models.body_errors`).
- Another 200 that is no model's answer is retried, its first bytes logged without the key.
- A model's answer is checked against the model asked (:mod:`mip.models.served`): another
  model's reply is a failure, never a verdict.
- A redirect is a final error: the API key stays with its origin.
- A refusal no retry mends (400, 401, …) is final; a few in a row stop the job.
- A retryable reply (429, 5xx) waits what the server asks, unless that is too long to wait.

>>> from mip.models.fail_fast import FailFast
>>> root = "http://127.0.0.1:8000/v1"
>>> outcomes = Outcomes(ServedModel("m", root), FailFast("m"), root, stop=lambda: None)
>>> outcomes("r1", 302, {"Location": "http://elsewhere/v1"}, b"", 0.1, retry=0).error.split(";")[0]
'HTTP 302: http://127.0.0.1:8000/v1 redirects to http://elsewhere/v1'
>>> outcomes("r1", 503, {"Retry-After": "2"}, b'{"error": {"message": "busy"}}', 0.1, retry=0)
Retry(error='HTTP 503: busy', delay=2.0)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from mip.config.masking import masker, printable
from mip.models.base import Completion
from mip.models.body_errors import status_in_body
from mip.models.calls import Retry
from mip.models.chat_api import asked_wait, completion_from_body, error_message, retry_delay, should_retry
from mip.models.fail_fast import FailFast
from mip.models.safe_http import endpoint
from mip.models.served import ServedModel

LOGGED_BODY_BYTES = 2000  # of a 200 reply that is no model's answer, in the job's log

log = logging.getLogger(__name__)


class Outcomes:
    """The reading of one job's replies from the server at ``root``: ``served`` checks which
    model answered, ``fail_fast`` counts the refusals, and ``stop`` (the backend's
    ``stop_sending``) is called when they say the job sends nothing more."""

    def __init__(self, served: ServedModel, fail_fast: FailFast, root: str, stop: Callable[[], None]):
        self.served, self.fail_fast, self.root, self.stop = served, fail_fast, root, stop
        self._url = endpoint(root, "chat/completions")

    def __call__(self, request_id: str, status: int, headers: Mapping[str, str], raw: bytes, latency: float,
                 retry: int) -> Completion | Retry:
        """The completion (or a final error) to hand back, else the error to retry after and the
        wait the SDK's rules give (the server's, or backoff)."""
        status = (status_in_body(raw) or status) if status == 200 else status  # a 200 error body: its status
        if status == 200:
            return self._answer(request_id, raw, latency)
        if 300 <= status < 400:
            return Completion(request_id, latency_s=latency, error=(
                f"HTTP {status}: {self.root} redirects to {headers.get('Location', '?')}; mip does not follow "
                "redirects, so the API key stays with its origin. Set model.base_url to the final address."))
        message = error_message(raw)
        error = f"HTTP {status}: {message}"
        if not should_retry(status, headers):  # the request itself is refused; the same one fails again
            if self.fail_fast.refused(status, message):  # a few in a row: the job stops sending
                self.stop()
            return Completion(request_id, error=error, latency_s=latency)
        self.fail_fast.accepted()  # retryable (429, 5xx): the body got through; the gate opens
        if self.fail_fast.wait_too_long(asked_wait(headers), status, message):
            self.stop()  # a retry before the asked time would be refused again
            return Completion(request_id, error=f"{error} (not retried: {self.fail_fast.tripped})", latency_s=latency)
        return Retry(error, retry_delay(headers, retry, longest=self.fail_fast.longest_wait_s))

    def _answer(self, request_id: str, raw: bytes, latency: float) -> Completion | Retry:
        """A 200 reply: the model's answer (or another model's, a failure), or a retry where the
        body is no model's answer (an error body, no choices, no readable message, no JSON)."""
        completion = completion_from_body(request_id, raw, latency, self._url)
        if not completion.error:
            completion = self.served.checked(completion, self.fail_fast.model)
            if not completion.error:  # an answer of the model asked: the refusals in a row end
                self.fail_fast.answered()
            elif self.fail_fast.refused(200, completion.error):  # another model, a few in a row: stop
                self.stop()
            return completion
        # Another try may fare better. The body goes to the job's log, capped, keys masked and
        # control codes escaped (mip.config.masking).
        log.warning("%s: %s. The reply's first %d of %d bytes: %s", request_id, completion.error,
                    min(len(raw), LOGGED_BODY_BYTES), len(raw),
                    printable(masker().text(raw[:LOGGED_BODY_BYTES].decode("utf-8", "backslashreplace"))))
        self.fail_fast.accepted()
        return Retry(completion.error)
