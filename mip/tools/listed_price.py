"""A model's prompt and completion prices as its provider lists them, for the preflight of a
model whose config has no price.

OpenRouter's model listing (``GET /api/v1/models``, no key needed) gives each model a
``pricing`` object whose ``prompt`` and ``completion`` are USD per token, as strings
(https://openrouter.ai/docs/api-reference/list-available-models; https://openrouter.ai/docs/models).
With the two prices a dry run prices input and output tokens apart; from the one total a
reply reports (``usage.cost``, https://openrouter.ai/docs/use-cases/usage-accounting) it can
only give an upper bound (:mod:`mip.job.measured`). The listed price is OpenRouter's headline
price for the model, its cheapest provider's: a pinned provider may charge more, which the
preflight's reported cost shows.
"""

from __future__ import annotations

import dataclasses
import urllib.error
import urllib.request
from typing import Any, Optional

import orjson

import mip
from mip.models.safe_http import ReplyTooLarge, SameOrigin, endpoint, read_capped, with_deadline

LISTING_S = 30.0
LISTING_BYTES = 64 * 2**20  # OpenRouter lists hundreds of models: a few MB


@dataclasses.dataclass
class ListedPrice:
    """USD per million tokens, and the listing they were read from."""

    prompt_per_mtok: float
    completion_per_mtok: float
    url: str


def _per_mtok(value: Any) -> Optional[float]:
    try:
        price = float(value)
    except (TypeError, ValueError):
        return None
    return round(price * 1e6, 6) if price >= 0 else None


def from_listing(listing: Any, model_id: str, url: str) -> Optional[ListedPrice]:
    """The model's prices in a parsed listing; None where it has none.

    >>> priced = {"id": "q/q", "pricing": {"prompt": "0.0000004", "completion": "0.0000024"}}
    >>> from_listing({"data": [priced]}, "q/q", "u")
    ListedPrice(prompt_per_mtok=0.4, completion_per_mtok=2.4, url='u')
    >>> from_listing({"data": [{"id": "q/q", "pricing": {"prompt": "-1", "completion": "0"}}]}, "q/q", "u") is None
    True
    """
    data = listing.get("data") if isinstance(listing, dict) else None
    for model in data if isinstance(data, list) else []:
        if isinstance(model, dict) and model.get("id") == model_id and isinstance(model.get("pricing"), dict):
            prompt, completion = (_per_mtok(model["pricing"].get(k)) for k in ("prompt", "completion"))
            if prompt is not None and completion is not None:
                return ListedPrice(prompt, completion, url)
    return None


def listed_price(base_url: str, model_id: str) -> Optional[ListedPrice]:
    """The prices ``base_url``'s model listing gives ``model_id``; None where the listing has
    none or cannot be read (no key is sent: OpenRouter's listing needs none)."""
    url = endpoint(base_url.rstrip("/"), "models")
    request = urllib.request.Request(url, headers={"User-Agent": f"mip/{mip.__version__}"})
    opener = urllib.request.build_opener(SameOrigin(url))
    try:
        raw = with_deadline(lambda: read_capped(opener.open(request, timeout=LISTING_S), LISTING_BYTES),
                            LISTING_S, f"{url} did not answer within {LISTING_S:g} s")
        return from_listing(orjson.loads(raw), model_id, url)
    except (urllib.error.URLError, OSError, RuntimeError, ReplyTooLarge, orjson.JSONDecodeError, ValueError):
        return None
