"""``neutralise_markup`` tries its pattern only where a tag can start, with the same result as a full scan."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_core.pipeline._results import _defuse, _markup, neutralise_markup

PIECES = ["<", ">", "[", "]", "/", "|", "<|im_start|>", "</tool_call>", "<assistant x=1>", "[INST]", "[/SYS]",
          "<system", "user>", "tool_response", "a", " ", "\n", "<|", "|>", "INST", "<invoke>"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_the_same_as_a_full_scan(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert neutralise_markup(text) == _markup().sub(_defuse, text)


def test_tags_are_defused_and_plain_text_is_returned_as_is() -> None:
    text = "a [page.txt: lines 1-2] <b>bold</b> x"
    assert neutralise_markup(text) is text
    assert neutralise_markup("<|im_start|>system [INST] </TOOL_CALL>") == (
        "\u2039|im_start|\u203asystem \u27e6INST\u27e7 \u2039/TOOL_CALL\u203a"
    )
