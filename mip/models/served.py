"""Whether a reply came from the model that was asked: the id a chat-completions reply names
(``"model"``) against the id requested, allowing only the aliases each provider documents.

A reply from another model is no verdict of this one (a router's fallback, a proxy that serves
what it has, a server started with other weights): :class:`ServedModel` turns it into an
infrastructure failure that names both ids (:mod:`mip.models.openai_compat`).

The aliases, per provider (by the base URL's host):

- every server: Google's endpoint lists ids as ``models/…`` while requests take the bare id
  (https://ai.google.dev/gemini-api/docs/openai); the prefix is ignored on both sides.
- OpenAI (``api.openai.com``): an alias answers as its dated snapshot, ``gpt-4o`` as
  ``gpt-4o-2024-08-06`` (https://platform.openai.com/docs/models: "gpt-4o … points to
  gpt-4o-2024-08-06"); older snapshots carry four digits (``gpt-3.5-turbo-0125``).
- OpenRouter (``openrouter.ai``): a variant suffix (``:free``, ``:nitro``, ``:floor``,
  ``:thinking``, ``:online``, ``:exacto``) routes, it names no other model
  (https://openrouter.ai/docs/guides/routing/model-variants); the model listing's
  ``canonical_slug`` is the same model under its permanent, often dated, name
  (https://openrouter.ai/docs/api-reference/models/get-models); dated snapshots as OpenAI's;
  a ``~author/family-latest`` alias answers as the concrete model of that author it resolved
  to (https://openrouter.ai/docs/guides/routing/routers/latest-resolution).
- every server: the same id up to its provider prefix, case or a date suffix (a proxy that strips
  ``openai/``, a lower-cased id, a dated id on another host: :func:`plain`), and any id the
  ``/models`` listing gives the same weights (vLLM lists each ``--served-model-name`` with one
  ``root`` and answers with the first); another model is still refused.

A reply without a model id is taken as it is (some servers leave it out).

>>> ServedModel("gpt-4o", "https://api.openai.com/v1").mismatch("gpt-4o-2024-08-06") is None
True
>>> ServedModel("qwen/qwen3-8b:free", "https://openrouter.ai/api/v1").mismatch("qwen/qwen3-8b") is None
True
>>> ServedModel("fake-model", "http://127.0.0.1:8000/v1").mismatch("other-model")
"the reply came from model 'other-model', not the requested 'fake-model'"
"""

from __future__ import annotations

import logging
import re
import urllib.error
from collections.abc import Callable
from urllib.parse import urlsplit

import orjson

from mip.models.base import BackendSetupError, Completion
from mip.models.chat_api import error_message

log = logging.getLogger(__name__)

_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")
_VARIANT = re.compile(r":[a-z][a-z0-9-]*\Z")


def bare_id(model_id: str) -> str:
    """A model id without the ``models/`` prefix Google's ``/models`` lists it with
    (``models/gemini-3.1-pro-preview``; chat requests take the bare id)."""
    return model_id.removeprefix("models/")


def same_models(listing: object, requested: str) -> set[str]:
    """The other names a ``/models`` listing gives the requested model: OpenRouter's
    ``canonical_slug``.

    >>> same_models([{"id": "anthropic/claude-sonnet-4", "canonical_slug": "anthropic/claude-4-sonnet-20250522"}],
    ...             "anthropic/claude-sonnet-4:floor")
    {'anthropic/claude-4-sonnet-20250522'}
    """
    if not isinstance(listing, list) or not requested:
        return set()
    base = _VARIANT.sub("", bare_id(requested))
    mine = [m for m in listing if isinstance(m, dict) and bare_id(str(m.get("id"))) == base]
    roots = {m["root"] for m in mine if isinstance(m.get("root"), str)}  # vLLM: each --served-model-name of one model
    return ({m["canonical_slug"] for m in mine if isinstance(m.get("canonical_slug"), str)}
            | {str(m.get("id")) for m in listing if isinstance(m, dict) and roots and m.get("root") in roots})


def listed(listing: object, model_id: str | None, name: str, base_url: str, url: str) -> tuple[str | None, set[str]]:
    """The model id to ask for and its other names, from a server's ``/models`` reply (None: no
    listing; the first request will tell): ``model_id`` None (``auto``) takes the one model the
    server lists; a listed server that does not serve ``model_id`` is refused with what it serves.

    >>> listed({"data": [{"id": "models/gemini-3-flash"}]}, None, "g", "https://x/v1", "https://x/v1/models")
    ('gemini-3-flash', set())
    """
    data = listing.get("data") if isinstance(listing, dict) else None
    served = ([m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
              if isinstance(data, list) else [])
    same = same_models(data, model_id or (served[0] if len(served) == 1 else ""))
    if model_id is None:
        if len(served) != 1:
            raise BackendSetupError(f"model_id: auto needs a server that lists one model at {url}; "
                                    f"{base_url} lists {served}. Set model.model_id.")
        return bare_id(served[0]), same
    if served and bare_id(model_id) not in {bare_id(m) for m in served}:
        shown = ", ".join(sorted(served)[:50]) + (" …" if len(served) > 50 else "")
        raise BackendSetupError(f"{base_url} does not serve {model_id!r} (model {name!r}). It serves: {shown}")
    return model_id, same


def asked_listing(get: Callable[[], bytes], name: str, base_url: str, key_env: str) -> object:
    """The server's decoded ``/models`` reply as ``get()`` fetches it, or None where the server
    has no listing or sends no JSON (the first request will tell). A refused key or a server
    out of reach is a :class:`BackendSetupError` that says so, before any request is paid."""
    try:
        return orjson.loads(get())
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            raise BackendSetupError(f"{base_url} refused the API key from ${key_env}: "
                                    f"HTTP {e.code} {error_message(e.read())}") from None
        return None
    except (urllib.error.URLError, OSError) as e:
        raise BackendSetupError(f"Cannot reach {base_url} for model {name!r}: {getattr(e, 'reason', e)}.") from None
    except orjson.JSONDecodeError:
        return None


class ServedModel:
    """The check of one job's replies: ``mismatch(served)`` says why a reply's model is not the
    requested one, or None."""

    def __init__(self, requested: str, base_url: str, same_models: set[str] | None = None):
        host = (urlsplit(base_url).hostname or "").lower()
        self.provider = "openai" if host == "api.openai.com" else "openrouter" if host.endswith("openrouter.ai") else ""
        self.requested = bare_id(requested)
        base = _VARIANT.sub("", self.requested) if self.provider == "openrouter" else self.requested
        self.accepted = {self.requested, base, *(bare_id(m) for m in same_models or ())}
        """The ids the requested model answers as (a listing's canonical slug included)."""
        self.base_url = base_url
        self._said: set[str] = set()

    def checked(self, completion: Completion, model_name: str) -> Completion:
        """``completion``, or, where another model answered, an infrastructure failure that
        names both ids (logged once per served id): never a verdict of this model. Not
        retried: the same request goes the same way."""
        why = self.mismatch(completion.served_model)
        if why is None:
            return completion
        if completion.served_model not in self._said:
            self._said.add(str(completion.served_model))
            log.warning("Model %s: %s (base_url %s); its replies are not stored.", model_name, why, self.base_url)
        return Completion(completion.id, error=f"{why}; not stored as this model's answer",
                          latency_s=completion.latency_s)

    def mismatch(self, served: str | None) -> str | None:
        if not served or self._same(bare_id(served)):
            return None
        return f"the reply came from model {served!r}, not the requested {self.requested!r}"

    def _same(self, served: str) -> bool:
        # transformers serve answers "Org/Model@main" (the Hub id and its revision) for "Org/Model"
        if served in self.accepted or ("@" not in self.requested and served.partition("@")[0] in self.accepted):
            return True
        if self.provider in ("openai", "openrouter"):
            if any(served.startswith(a) and _DATED.fullmatch(served[len(a):]) for a in self.accepted):
                return True
        if self.provider == "openrouter" and self.requested.startswith("~"):  # ~author/family-latest
            return served.split("/", 1)[0] == self.requested[1:].split("/", 1)[0]
        return plain(served) in {plain(a) for a in self.accepted}


def plain(model_id: str) -> str:
    """A model id up to what proxies and other hosts change in it: the provider prefix
    (``openai/``), case, and a date suffix (``-2025-08-07``, ``-20250807``, ``-0125``).

    >>> plain("openai/GPT-OSS-120b-2025-08-05") == plain("gpt-oss-120b")
    True
    """
    name = model_id.rsplit("/", 1)[-1].lower()
    return _DATED.sub("", name) if _DATED.search(name) and _DATED.search(name).end() == len(name) else name
