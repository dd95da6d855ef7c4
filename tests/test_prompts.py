"""The prompts against App. B of the paper, read from shared/paper.

The paper's rendering lost its line breaks ("…problems.Instructions:- Solve…"), so each
built prompt, with its line breaks removed, must equal the paper's text exactly.
"""

from __future__ import annotations

import re

import pytest

from mip.experiment import prompts
from mip.strategies.rebuild import build_prompt

from .conftest import PAPER, compose

pytestmark = pytest.mark.skipif(not PAPER.is_file(), reason=f"paper not found at {PAPER}")

SECTIONS = {"math": "B.1.1 Math", "ner": "B.1.2 NER", "occurrence": "B.1.3 Occurrence",
            "sentiment": "B.1.4 Sentiment", "wsd": "B.1.5 WSD"}


def paper_section(title: str) -> str:
    text = PAPER.read_text(encoding="utf-8")
    match = re.search(rf"^#+ {re.escape(title)}\n\n(.*?)\n\n(?=#)", text, re.S | re.M)
    assert match, f"section {title} not found in the paper"
    return match.group(1).strip()


def paper_instances(section: str) -> list[str]:
    return re.findall(r"Instance \d+: (.*?)(?=Instance \d+: |$)", section)


@pytest.fixture(scope="module")
def tasks():
    return compose("task=all").task  # the paper's five tasks (the plain default is arith)


@pytest.mark.parametrize("task", sorted(SECTIONS))
def test_standard_prompt_is_app_b1_word_for_word(tasks, task):
    expected = paper_section(SECTIONS[task])
    texts = paper_instances(expected)
    assert len(texts) == 3
    built = build_prompt(tasks[task], "standard", texts)
    assert built.replace("\n", "") == expected
    # Structure the flattening hides: one line per bullet and per instance.
    assert built.startswith("Task: ") and "\n\nInstructions:\n- " in built
    assert built.endswith("\n".join(f"Instance {i}: {t}" for i, t in enumerate(texts, 1)))


@pytest.mark.parametrize("variant,title", [("hint", "B.2.1 Hint Prompting"), ("strategy", "B.2.2 Suggested Strategy Prompting")])
def test_variant_blocks_are_app_b2_and_sit_before_the_example(tasks, variant, title):
    section = paper_section(title)
    block = section.split("\n\n")[-1]
    built = build_prompt(tasks["ner"], variant, ["x", "y"])
    assert (prompts.HINT if variant == "hint" else prompts.STRATEGY).replace("\n", "") == block
    instructions_end = built.index('- Return only a JSON object with the field "answer".')
    assert instructions_end < built.index(block.split(":")[0] + ":") < built.index("Example response format:")


def _normalise(text: str) -> str:
    # The paper's rendering dropped spaces around some dashes and commas
    # ("problems— whether", "whether\"positive\"", "odd,how"): compare with spaces removed.
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("task,title", [("math", "Math"), ("ner", "NER"), ("occurrence", "Occurrence"),
                                        ("sentiment", "Sentiment"), ("wsd", "WSD")])
def test_self_prompting_meta_prompt_is_app_b23(tasks, task, title):
    text = PAPER.read_text(encoding="utf-8")
    block = text.split("##### First Stage")[1].split("##### Second Stage")[0]
    template = re.search(r"###### Shared Template\n\n(.*?)\n\n", block, re.S).group(1)
    sub = re.search(rf"###### {title}\n\n(.*?)(?=\n\n######|\Z)", block, re.S).group(1).strip()
    task_spec = re.search(r"<TASK_SPEC>:(.*?)<SOLVE_AND_COUNT>:", sub, re.S).group(1)
    solve = sub.split("<SOLVE_AND_COUNT>:")[1]
    unit = "math problems" if task == "math" else "instances"
    expected = (template.replace("$num_instances", "2000").replace("<INPUT_UNIT>", unit)
                .replace("<TASK_SPEC>", task_spec).replace("<SOLVE_AND_COUNT>", solve))
    assert _normalise(prompts.meta_prompt(tasks[task].prompt, 2000)) == _normalise(expected)


def test_self_prompting_second_stage_puts_the_instruction_before_every_instance():
    built = prompts.self_prompt("  Do the task.\n", ["first text", "second text"])
    assert built == "Do the task.\n\nInstance 1: first text\nInstance 2: second text"


def test_prompt_hash_is_sha256_of_the_text():
    import hashlib

    assert prompts.prompt_hash("abc") == hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize("label", ['odd"number', "odd\\number"])
def test_a_label_that_json_must_escape_is_refused_at_composition(results, label):
    """The prompt shows a label between double quotes and asks for it inside a
    JSON string; one with a double quote or a backslash cannot be copied as shown, so the job is
    refused in one line (exit 2) before it runs."""
    from .conftest import run_entry

    out = run_entry("run.py", "model=mock", "task=arith", "setting=smoke", "progress=false",
                    f"task.arith.labels=[even_number,'{label}']")
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.count("error:") == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "cannot be written inside the answer's JSON string" in out.stderr
    assert not list(results.rglob("*.jsonl"))  # nothing was asked or stored


def test_a_label_with_a_control_character_is_refused():
    from mip.config.task import unwritable_label
    from mip.job.checks import settings

    cfg = compose("model=mock", "task=arith", "setting=smoke")
    cfg.task["arith"].labels = ["even\tnumber", "odd_number"]
    with pytest.raises(ValueError, match="cannot be written inside the answer's JSON string"):
        settings(cfg)
    assert unwritable_label(["even_number", "odd_number"]) is None and unwritable_label(["é", "ü"]) is None
