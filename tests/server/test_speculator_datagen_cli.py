"""`turnspec speculator datagen` builds its prompts while the engine loads, with the model
folder's chat template; the engine's template must render them the same."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from turnspec.engine.chat import ChatTemplate
from turnspec.server.cli.speculator_datagen import _check_same_render


def test_the_two_templates_must_agree(smollm2_dir):
    ours = ChatTemplate.from_model_dir(smollm2_dir)
    _check_same_render(ours, ChatTemplate.from_model_dir(smollm2_dir), 2)   # the same folder
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    tok.chat_template = "{{ 'Hello.' }}" + tok.chat_template   # a different template
    other = ChatTemplate(tok, "llama", ours.vocab_size, ours.stop_token_ids)
    with pytest.raises(SystemExit, match="renders differently through the engine's chat template"):
        _check_same_render(ours, other, 2)
