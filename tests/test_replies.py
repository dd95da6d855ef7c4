"""A reply's text from any shape of message.content (mip.models.replies)."""

from __future__ import annotations

import doctest
import json

import pytest

from mip.models import replies
from mip.models.replies import content_text
from mip.experiment.scoring import parse_answer

SENTIMENT = ("negative", "positive")
ANSWER = 'All counted. {"answer": "positive"}'


@pytest.mark.parametrize(
    "content,refusal,expected",
    [
        (None, None, None),
        ("", None, ""),
        (ANSWER, None, ANSWER),
        ([{"type": "text", "text": ANSWER}], None, ANSWER),
        ([{"type": "output_text", "text": ANSWER, "annotations": []}], None, ANSWER),
        ([{"type": "text", "text": {"value": ANSWER, "annotations": []}}], None, ANSWER),  # Assistants API
        ({"type": "text", "text": ANSWER}, None, ANSWER),  # one part, not in a list
        ([{"text": ANSWER}], None, ANSWER),  # no type: a text part
        (["All counted.", {"type": "text", "text": '{"answer": "positive"}'}], None, 'All counted.\n{"answer": "positive"}'),
        ([{"type": "thinking", "thinking": [{"type": "text", "text": "maybe negative"}]}, {"type": "text", "text": ANSWER}],
         None, ANSWER),  # Mistral: the thinking part is no answer
        ([{"type": "reasoning", "text": 'maybe {"answer": "negative"}'}, {"type": "text", "text": ANSWER}], None, ANSWER),
        ([{"type": "image_url", "image_url": {"url": "data:"}}, {"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
         None, "a\nb"),
        ([{"type": "refusal", "refusal": "I won't."}], None, "I won't."),
        ([{"type": "refusal", "refusal": "I won't."}, {"type": "text", "text": ANSWER}], None, ANSWER),  # text first
        (None, "I won't.", "I won't."),
        ([{"type": "text", "text": ANSWER}], "I won't.", ANSWER),
        ([], None, None),
        ([{"type": "image_url", "image_url": {}}], None, None),
        ([{"type": "text", "text": None}, {"type": "text"}, 7, None], None, None),
        (42, None, None),
    ],
)
def test_content_text(content, refusal, expected):
    assert content_text(content, refusal) == expected


def test_a_correct_answer_in_text_parts_parses_where_its_json_encoding_did_not():
    content = [{"type": "text", "text": ANSWER}]
    assert parse_answer(json.dumps(content), SENTIMENT) is None  # the bug: quotes escaped
    assert parse_answer(content_text(content), SENTIMENT) == "positive"


def test_a_lenient_line_ending_a_part_is_not_glued_to_the_next_part():
    content = [{"type": "text", "text": "answer: positive"}, {"type": "text", "text": "Thanks for asking"}]
    assert parse_answer(content_text(content), SENTIMENT) == "positive"


def test_doctests():
    assert doctest.testmod(replies).failed == 0


def test_an_error_message_quoting_control_codes_is_escaped():
    """A server's error message is printed and logged: its terminal control codes come escaped."""
    from mip.models.chat_api import error_message

    said = error_message(b'{"error": {"message": "\\u001b[2J\\u001b]0;pwned\\u0007verdict: correct\\r"}}')
    assert said == "\\x1b[2J\\x1b]0;pwned\\x07verdict: correct\\r"
    assert "\x1b" not in error_message(b"\x1b[2J<html>")
