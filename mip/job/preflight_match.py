"""Whether a stored preflight speaks for a run: the same endpoint, the same answer-shaping model
settings, and young enough.

A preflight file (:mod:`mip.tools.preflight`) records the base URL it was sent to (its secrets
masked: :func:`masked_url`) and the model's answer-shaping settings (:func:`model_settings`).
``preflight=required`` and a dry run's measured numbers (:mod:`mip.job.measured`) use a passing
preflight only where both match the run's and it is younger than ``preflight_max_age_days``;
:func:`why_not` says, in a few words, why another is not used.

>>> masked_url("https://user:pa55word-1@host/v1?key=AbCd1234efgh")
'https://***@host/v1?key=***'
>>> why_not({"when": "2026-01-01T00-00-00", "base_url": "u", "settings": {}}, "u", {}, 7,
...         now=datetime(2026, 1, 9, tzinfo=timezone.utc))
'made 2026-01-01T00-00-00, older than preflight_max_age_days=7'
>>> why_not({"when": "2026-01-01T00-00-00", "base_url": "v", "settings": {}}, "u", {}, 7,
...         now=datetime(2026, 1, 2, tzinfo=timezone.utc))
'sent to v, not u'
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mip.config import Config


def masked_url(url: str) -> str:
    """``url`` with its key-bearing parts (userinfo, key-like query values) as ``***``."""
    from mip.config.redact import url_secrets

    for secret in sorted(url_secrets(url), key=len, reverse=True):
        url = url.replace(secret, "***")
    return url.rstrip("/")


def model_settings(cfg: Config) -> dict[str, Any]:
    """The model's answer-shaping settings as a job's key records them (JSON-plain)."""
    from mip.experiment.keys import answer_settings

    return json.loads(json.dumps(answer_settings(cfg)["model"], sort_keys=True, default=str))


def why_not(found: dict[str, Any], base_url: str, settings: dict[str, Any], max_age_days: float,
            now: datetime | None = None) -> str | None:
    """Why the stored preflight ``found`` does not speak for a run at ``base_url`` (masked)
    with ``settings``; None where it does."""
    when = str(found.get("when", ""))
    try:
        made = datetime.strptime(when, "%Y-%m-%dT%H-%M-%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return f"its time {when!r} cannot be read"
    if ((now or datetime.now(timezone.utc)) - made).total_seconds() > max_age_days * 86400:
        return f"made {when}, older than preflight_max_age_days={max_age_days:g}"
    if "settings" not in found:
        return f"made {when} by an older mip that recorded no model settings"
    if found.get("base_url") != base_url:
        return f"sent to {found.get('base_url')}, not {base_url}"
    if found["settings"] != settings:
        differ = sorted(k for k in set(found["settings"]) | set(settings)
                        if found["settings"].get(k) != settings.get(k))
        return f"made with other model settings ({', '.join(differ)})"
    return None


def why_not_for(cfg: Config, found: dict[str, Any]) -> str | None:
    """:func:`why_not` for a run of ``cfg``."""
    return why_not(found, masked_url(cfg.model.base_url or ""), model_settings(cfg), cfg.preflight_max_age_days)
