"""What answers datagen: each engine's flags are checked before anything renders, the two write
meta.json with the same keys, and the local engine's template must render as the folder's."""

from __future__ import annotations

import argparse

import pytest
from transformers import AutoTokenizer

import turnspec.engine.sglang as sglang_backend
from turnspec.cli.speculator import register
from turnspec.engine.chat import ChatTemplate
from turnspec.engine.protocol import SamplingParams
from turnspec.speculator.datagen_sglang import SGLangTarget
from turnspec.speculator.datagen_target import LocalTarget, check_same_render, make_target


def _greedy(n: int) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=n)


def _datagen_args(*argv: str, command: str = "datagen") -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["speculator", command, "--out", "unused", *argv])


def test_the_two_templates_must_agree(smollm2_dir):
    ours = ChatTemplate.from_model_dir(smollm2_dir)
    check_same_render(ours, ChatTemplate.from_model_dir(smollm2_dir), 2)   # the same folder
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    tok.chat_template = "{{ 'Hello.' }}" + tok.chat_template   # a different template
    other = ChatTemplate(tok, "llama", ours.vocab_size, ours.stop_token_ids)
    with pytest.raises(SystemExit, match="renders differently through the engine's chat template"):
        check_same_render(ours, other, 2)


def test_sglang_flags_with_the_local_engine_are_an_error(smollm2_dir):
    for flags in (["--sglang-mem-fraction", "0.5"], ["--sglang-arg", "x=1"],
                  ["--engine", "local", "--sglang-attention-backend", "fa3"],
                  ["--sglang-spec-plan-at", "verify"]):
        with pytest.raises(SystemExit, match=r"--sglang-\S+ apply to --engine sglang only"):
            make_target(_datagen_args("--model", str(smollm2_dir), *flags))


def test_local_flags_with_sglang_are_an_error(smollm2_dir, monkeypatch):
    # as on a GPU machine with sglang: the install check passes, the flags are checked next
    monkeypatch.setattr(sglang_backend, "sglang_available", lambda: True)
    args = _datagen_args("--engine", "sglang", "--model", str(smollm2_dir), "--feed", "batches",
                         "--threads", "1", "--max-batch", "512", "--device", "cuda")
    with pytest.raises(SystemExit, match="--device, --max-batch, --threads, --feed apply to the "
                                         "local engine only; expected SGLang's own flags"):
        make_target(args)
    for flag in (["--admit-min-free", "4"], ["--tool-grammar"]):
        with pytest.raises(SystemExit, match=f"{flag[0]} apply to the local engine only"):
            make_target(_datagen_args("--engine", "sglang", "--model", str(smollm2_dir), *flag))
    # the flags both read: the model, a drafter, SGLang's own (nothing loads before load())
    target = make_target(_datagen_args("--engine", "sglang", "--model", str(smollm2_dir),
                                       "--speculator", "none", "--sglang-mem-fraction", "0.5",
                                       "--sglang-arg", "cuda_graph_max_bs=256"))
    assert isinstance(target, SGLangTarget) and target.batch_size == 1024
    assert target.cfg.mem_fraction == 0.5
    assert target.cfg.engine_kwargs()["cuda_graph_max_bs"] == 256
    assert target.stop_ids == {2}                      # SmolLM2's <|im_end|>, as the local engine's
    target.close()                                     # before load: nothing to shut down


def test_magpie_builds_either_target(smollm2_dir, monkeypatch):
    # magpie shares the datagen target without datagen's local-only flags (set as defaults)
    monkeypatch.setattr(sglang_backend, "sglang_available", lambda: True)
    for engine, kind in (("local", LocalTarget), ("sglang", SGLangTarget)):
        args = _datagen_args("--engine", engine, "--model", str(smollm2_dir), "--conversations", "4",
                             command="magpie")
        assert isinstance(make_target(args), kind)


def test_both_engines_write_the_same_meta_keys(smollm2_dir, monkeypatch):
    monkeypatch.setattr(sglang_backend, "sglang_available", lambda: True)
    local = make_target(_datagen_args("--model", str(smollm2_dir)))
    sgl = make_target(_datagen_args("--engine", "sglang", "--model", str(smollm2_dir)))
    assert isinstance(local, LocalTarget) and local.batch_size == 256
    assert list(local.meta()) == list(sgl.meta())
    assert local.meta()["feed"] == "stream" and sgl.meta()["feed"] == "chunks"
    assert local.meta()["admit_min_free"] == 4                # max_batch 32 / 8
    assert (local.name, sgl.name) == ("local", "sglang")
    assert local.counts == sgl.counts == {"prompt_tokens": 0, "cached_prompt_tokens": 0}


def test_tool_grammar_answers_as_the_server_does(smollm2_dir):
    # A hand-written voice turn that SmolLM2 answers, without a grammar, with a tool result it
    # makes up. Under --tool-grammar it is answered as the server answers it (tool_choice auto):
    # `<tool_` goes on as a call. A prompt without tools stays unconstrained.
    from turnspec.speculator.eval_set import eval_prompt_items

    target = make_target(_datagen_args("--model", str(smollm2_dir), "--threads", "2",
                                       "--speculator", "none", "--tool-grammar"))
    target.load(2)
    items, _ = eval_prompt_items(target._engine.chat.render_many)
    turn = next(it for it in items if it.id.startswith("indep-airline-bag_didnt_arrive") and it.tools
                and it.id.endswith(":8"))
    target.register([turn])
    assert target.meta()["tool_grammar"] == "auto"
    stream = target.feed(40, 8)["stream"]
    tok = target._engine.chat.tokenizer
    (_, constrained), = stream([list(turn.prompt_ids)])
    plain = target._engine.generate_batch([list(turn.prompt_ids)], _greedy(40))[0]
    assert "<tool_response>" in tok.decode(plain)
    assert tok.decode(constrained).startswith("<tool_call>\n{\"name\":\"bag_trace\"")
    assert target._grammar([1, 2, 3]) is None
