"""Every JSON object and array embedded in free text, found in time linear in its length.

A model's output is prose, code fences and JSON mixed; the answer rule (:mod:`mip.experiment.scoring`)
needs every place where a JSON object parses, wherever it starts and however far it is
from anything else. Trying ``json.JSONDecoder.raw_decode`` at every ``{`` is quadratic on
unbalanced nesting (``{"a": {"a": {"a": …`` fails only at the end, from every brace) and
raises ``RecursionError`` on deep nesting. This scanner accepts exactly what ``raw_decode``
accepts at each ``{`` and ``[`` (same grammar: strict strings, ``NaN``/``Infinity``, the
last of duplicate keys) but parses the openings right to left and looks nested containers
up instead of parsing them again.

Why that is linear: a parse from an opening walks only its own top level (strings,
numbers, punctuation), since every container nested in it is a lookup. Two parses that
walk the same character at their top level see it in opposite lexical states (one inside
a string, one outside) — had the later one started outside a string of the earlier, it
would be nested in it and skipped. So no character is walked more than twice, and
:attr:`Scan.work` (tokens read plus string characters scanned) stays below a small
multiple of the length; ``tests/test_jsonscan.py`` checks that on adversarial text.

>>> scan = Scan('I think {"answer": "PER", "ids": [1, 2]} and {"x": {')
>>> [(start, end, value) for start, (end, value) in sorted(scan.found.items())]
[(8, 40, {'answer': 'PER', 'ids': [1, 2]}), (33, 39, [1, 2])]
"""

from __future__ import annotations

import math
import re
from json.decoder import scanstring

_OPENINGS = re.compile(r"[{\[]")
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")  # json.scanner.NUMBER_RE
_CONSTANTS = (("null", None), ("true", True), ("false", False), ("NaN", math.nan), ("Infinity", math.inf),
              ("-Infinity", -math.inf))
_OBJECT_SECOND = frozenset('"} \t\n\r')
_FAIL = object()


class Scan:
    """The JSON containers of one text.

    ``found`` maps the index of each ``{`` or ``[`` where a container parses to
    ``(end, value)``, ``end`` being the index just past its closing bracket — exactly
    ``json.JSONDecoder().raw_decode(text, start)`` reversed, for every start where that
    succeeds (containers nested in others included).
    """

    def __init__(self, text: str):
        self.text = text
        self.found: dict[int, tuple[int, object]] = {}
        self.work = 0
        """Tokens read plus string characters scanned: the cost the tests bound."""
        for start in reversed([m.start() for m in _OPENINGS.finditer(text)]):
            if self._cannot_open(start):
                continue
            end, value = self._container(start)
            if value is not _FAIL:
                self.found[start] = (end, value)

    def _cannot_open(self, start: int) -> bool:
        """A quick no for the commonest failures, such as a run of braces: an object must
        go on with a key or its end, and a container whose first item fails fails."""
        second = self.text[start + 1:start + 2]
        if self.text[start] == "{":
            return second not in _OBJECT_SECOND
        return second in ("{", "[") and start + 1 not in self.found

    def _container(self, start: int) -> tuple[int, object]:
        text = self.text
        is_object = text[start] == "{"
        closer = "}" if is_object else "]"
        items: list = []
        key = ""  # an array's items have none
        pos = _WS.match(text, start + 1).end()
        if text.startswith(closer, pos):
            return pos + 1, {} if is_object else []
        while True:
            self.work += 1
            if is_object:
                if not text.startswith('"', pos):
                    return pos, _FAIL
                pos, key = self._string(pos)
                if key is _FAIL:
                    return pos, _FAIL
                pos = _WS.match(text, pos).end()
                if not text.startswith(":", pos):
                    return pos, _FAIL
                pos = _WS.match(text, pos + 1).end()
            pos, value = self._value(pos)
            if value is _FAIL:
                return pos, _FAIL
            items.append((key, value) if is_object else value)
            pos = _WS.match(text, pos).end()
            if text.startswith(closer, pos):
                return pos + 1, dict(items) if is_object else items
            if not text.startswith(",", pos):
                return pos, _FAIL
            pos = _WS.match(text, pos + 1).end()

    def _value(self, pos: int) -> tuple[int, object]:
        text = self.text
        first = text[pos:pos + 1]
        if first == '"':
            return self._string(pos)
        if first in ("{", "["):  # parsed already: openings are visited right to left
            end, value = self.found.get(pos, (pos, _FAIL))
            return end, value
        for word, constant in _CONSTANTS:
            if text.startswith(word, pos):
                return pos + len(word), constant
        number = _NUMBER.match(text, pos)
        if not number:
            return pos, _FAIL
        self.work += number.end() - pos
        integer, fraction, exponent = number.groups()
        try:  # as json does; int() refuses more than sys.get_int_max_str_digits() digits, and so does json
            value = float(integer + (fraction or "") + (exponent or "")) if fraction or exponent else int(integer)
        except ValueError:
            return pos, _FAIL
        return number.end(), value

    def _string(self, pos: int) -> tuple[int, object]:
        try:
            value, end = scanstring(self.text, pos + 1, True)
        except ValueError as e:  # unterminated (scanned to the end), a control character or a bad escape
            failed_at = len(self.text) if str(e).startswith("Unterminated") else getattr(e, "pos", pos)
            self.work += max(failed_at - pos, 1)
            return pos, _FAIL
        self.work += end - pos
        return end, value
