"""A reply's text, whatever shape the server gives ``message.content``.

OpenAI-compatible servers return the content as a string, ``None``, or a list of parts
(``[{"type": "text", "text": "…"}]``; Mistral puts ``thinking`` parts beside the text; the
Responses API names text parts ``output_text``). Encoding the list as JSON, as was done,
escapes the quotes of the model's ``{"answer": …}`` and turns a correct answer into a parse
failure. :func:`content_text` reads the text parts instead:

- text parts are ``{"type": "text" | "output_text", "text": str}`` (the Assistants API's
  ``"text": {"value": str}`` too), a part without ``type`` that has a string ``text``, or a
  plain string; they are joined in order with a newline (parts are blocks of the reply,
  as inspect_ai's ``ChatMessage.text`` joins them; a newline ends a lenient ``answer:``
  line rather than gluing it to the next block's first word);
- other parts (images, audio, ``thinking``/``reasoning``, tool calls) are not the answer
  and are left out; the reasoning trace is read elsewhere (``openai_compat.reasoning_of``);
- refusal parts (``{"type": "refusal", "refusal": str}``) and the message's own
  ``refusal`` are the text only when there is no text part: a reader of the record then
  sees why there is no answer, and the verdict is a parse failure, as it should be;
- no text at all, or a shape that is none of these, gives None.

>>> content_text([{"type": "text", "text": 'I counted. {"answer": "positive"}'}])
'I counted. {"answer": "positive"}'
>>> content_text([{"type": "thinking", "thinking": "hmm"}, "A", {"type": "output_text", "text": "B"}])
'A\\nB'
>>> content_text([{"type": "refusal", "refusal": "I can't help with that."}])
"I can't help with that."
>>> content_text(None, refusal="No.")
'No.'
>>> readable(42), readable({"answer": "x"}), readable([{"type": "text", "text": "a"}]), readable(None)
(False, False, True, True)
>>> split_thoughts('<thought>Count: 3 even.</thought>{"answer": "even"}')
('Count: 3 even.', '{"answer": "even"}')
>>> with_lone_surrogates(b'{"reasoning": "a \\ud83d b", "pair": "\\ud83d\\ude00"}')
({'reasoning': 'a \ufffd b', 'pair': '😀'}, 1)

Exercised by ``pytest tests/test_replies.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

TEXT_TYPES = ("text", "output_text")
"""Part types whose ``text`` is the reply's text."""


def _part_text(part: object) -> str | None:
    """The text of one content part, or None when it is not a text part."""
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping) or part.get("type", "text") not in TEXT_TYPES:
        return None
    text = part.get("text")
    if isinstance(text, Mapping):  # Assistants API: {"type": "text", "text": {"value": …, "annotations": […]}}
        text = text.get("value")
    return text if isinstance(text, str) else None


def _refusal_text(part: object) -> str | None:
    if isinstance(part, Mapping) and part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
        return part["refusal"]
    return None


def content_text(content: object, refusal: str | None = None) -> str | None:
    """The text of a message's ``content`` (a string, None, one part or a list of parts); see the module docstring.

    ``refusal`` is the message's own ``refusal`` field, used only when the content has no text.
    """
    if isinstance(content, str):
        return content
    parts = [content] if isinstance(content, Mapping) else content if isinstance(content, list) else []
    texts = [t for t in map(_part_text, parts) if t is not None]
    if texts:
        return "\n".join(texts)
    refusals = [r for r in map(_refusal_text, parts) if r is not None]
    if refusals:
        return "\n".join(refusals)
    return refusal if isinstance(refusal, str) else None


def _is_part(part: object) -> bool:
    """Whether ``part`` has a content part's shape: a string, or an object with a string
    ``type`` or a ``text`` field."""
    return isinstance(part, str) or (isinstance(part, Mapping)
                                     and (isinstance(part.get("type"), str) or "text" in part))


def readable(content: object) -> bool:
    """Whether ``content`` has one of the shapes a message's content takes: text,
    None (no text: a length stop, an empty reply), one part, or a list of parts. A number, a
    bare object or a list of anything else is no reply of a model: an infrastructure failure.

    >>> readable("x"), readable([]), readable(["a", {"type": "image_url"}]), readable([7]), readable(True)
    (True, True, True, False, False)
    """
    if content is None or isinstance(content, str):
        return True
    if isinstance(content, list):
        return all(_is_part(part) for part in content)
    return isinstance(content, Mapping) and _is_part(content)


# Gemini's OpenAI-compatible endpoint, asked for thought summaries
# (extra_body.google.thinking_config.include_thoughts, https://ai.google.dev/gemini-api/docs/openai),
# puts them inline at the start of message.content, wrapped in <thought>…</thought>
# (as clients report it): they are the trace, never the answer.
_THOUGHT = re.compile(r"\A\s*<thought>(.*?)</thought>\s*", re.DOTALL)


def split_thoughts(text: str | None) -> tuple[str | None, str | None]:
    """``(thoughts, answer)``: the ``<thought>…</thought>`` blocks that open ``text`` (joined with
    a newline; None when there are none) and the text after them. An unclosed block is all
    thought: a reply cut off while thinking has no answer (a length stop says truncated)."""
    if not text or "<thought>" not in text[:200]:
        return None, text
    thoughts = []
    rest = text
    while match := _THOUGHT.match(rest):
        thoughts.append(match.group(1).strip())
        rest = rest[match.end():]
    if rest.lstrip().startswith("<thought>"):  # opened and never closed
        thoughts.append(rest.lstrip()[len("<thought>"):].strip())
        rest = ""
    return ("\n".join(thoughts) if thoughts else None), rest


_SURROGATE = re.compile("[\ud800-\udfff]")


def with_lone_surrogates(raw: bytes) -> tuple[Any, int]:
    """A JSON body that escapes half a surrogate pair (``"\\ud83d"`` alone: a model's output cut
    inside an emoji), which orjson refuses: read as JSON all the same (RFC 8259 §8.2 allows such
    escapes; Python's json reads them), each lone half as U+FFFD; and how many there were.
    Raises ``ValueError`` for what is no JSON at all."""
    count = 0

    def clean(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str):
            found = len(_SURROGATE.findall(value))
            count += found
            return _SURROGATE.sub("\ufffd", value) if found else value
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return clean(json.loads(raw)), count
