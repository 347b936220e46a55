"""Training smoke test on a tiny random Llama target (CPU, seconds): the loss falls, tau on
held-out data rises above 1, offline tau equals an online greedy speculative decode step by
step, and an interrupted run resumes to the same weights."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

from tests.speculator.tiny import NEW_TOKENS, TINY_LAYER_IDS, TINY_MASK
from turnspec.engine.drafter.folder import load_drafter
from turnspec.speculator import train_io
from turnspec.speculator.data import Sample, read_samples
from turnspec.speculator.target import FrozenTarget
from turnspec.speculator.tau import (
    evaluate_tau,
    evaluate_tau_blocks,
    evaluate_tau_runs,
    replay_steps,
)
from turnspec.speculator.train import TrainConfig, train


def _cfg(data: Path, target: Path, out: Path, **kw) -> TrainConfig:
    base = dict(data=data, model_dir=target, out=out, num_layers=1, block_size=4, num_taps=2,
                mask_token_id=TINY_MASK, batch_size=16, anchors=16, epochs=100, max_steps=120,
                lr=3e-3, log_every=20, eval_samples=16, final_eval_samples=16, progress=False,
                max_len=64)
    return TrainConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def trained(tiny_data: Path, tiny_target_dir: Path, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("run")
    return out, train(_cfg(tiny_data, tiny_target_dir, out, eval_every=60))


def test_loss_falls_and_heldout_tau_rises(trained):
    out, m = trained
    losses = [h["loss"] for h in m["history"] if "loss" in h]
    assert len(losses) == 6 and losses[-1] < losses[0] - 0.5, losses
    assert m["tau"]["tools-heldout"] > 1.3 and m["tau"]["generic-heldout"] > 1.3, m["tau"]
    assert any("eval" in h for h in m["history"])                      # eval during training
    # the step ending at each log point says where its time went, phase by phase
    phases = [h["step_ms"] for h in m["history"] if "loss" in h]
    assert len(phases) == 6 and all(list(p) == ["inputs", "target", "drafter", "backward",
                                                "optimizer"] for p in phases), phases
    assert all(v >= 0 for p in phases for v in p.values()) and sum(phases[-1].values()) > 0
    # and how busy the host was: this process's CPU per wall second (training works, so > 0)
    host = [(h["host_cpu"], h["load1"]) for h in m["history"] if "loss" in h]
    assert all(cpu > 0 and load >= 0 for cpu, load in host), host
    assert json.loads((out / "metrics.json").read_text())["steps"] == 120
    assert (out / "checkpoint.pt").is_file() and (out / "train.log").is_file()
    assert load_drafter(out / "drafter").fc.weight.dtype == torch.bfloat16


def test_soft_label_training_learns_too(tiny_data, tiny_target_dir, tmp_path):
    """With half the loss on the target's top-k distribution the drafter still learns the
    greedy tokens (the mix is what a soft-label run trains), and the run records the mix."""
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, soft_weight=0.5, soft_topk=4,
                   max_steps=80))
    losses = [h["loss"] for h in m["history"] if "loss" in h]
    assert losses[-1] < losses[0] - 0.5, losses
    assert m["tau"]["tools-heldout"] > 1.3, m["tau"]
    assert m["config"]["soft_weight"] == 0.5 and m["config"]["soft_topk"] == 4
    with pytest.raises(ValueError, match="soft_weight"):
        _cfg(tiny_data, tiny_target_dir, tmp_path, soft_weight=2.0)


def _online_greedy(drafter, frozen: FrozenTarget, model, prompt: list[int], n_new: int,
                   blk: int) -> tuple[list[int], list[int]]:
    """Greedy speculative decoding written out naively (full recompute each step)."""
    seq = list(prompt)
    seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))   # prefill's token
    produced = []
    while len(seq) - len(prompt) < n_new:
        p = len(seq) - 1                                                 # anchor position
        taps = frozen.features(torch.tensor([seq[:p]]))[0]                # rows < anchor
        kv = drafter.context_kv(drafter.project_context(taps), torch.arange(p))
        block = torch.tensor([[seq[p]] + [TINY_MASK] * (blk - 1)])
        h = drafter.forward_block(frozen.embed(block), (p + torch.arange(blk))[None],
                                  [k[None] for k, _ in kv], [v[None] for _, v in kv],
                                  torch.tensor([p]))
        drafts = frozen.logits(h[0, 1:]).argmax(-1).tolist()
        verify = model(torch.tensor([seq + drafts])).logits[0, p:].argmax(-1).tolist()
        a = 0
        while a < blk - 1 and drafts[a] == verify[a]:
            a += 1
        new = (drafts[:a] + [verify[a]])[: n_new - (len(seq) - len(prompt))]
        seq += new
        produced.append(len(new))
    return seq[len(prompt):], produced


def test_offline_tau_equals_online_greedy_decoding(trained, tiny_data, tiny_target_dir):
    from transformers import AutoModelForCausalLM

    out, _ = trained
    drafter = load_drafter(out / "drafter", dtype=torch.float64)          # fp64: no near-ties
    frozen = FrozenTarget.from_model_dir(tiny_target_dir, TINY_LAYER_IDS, dtype=torch.float64)
    model = AutoModelForCausalLM.from_pretrained(tiny_target_dir, dtype=torch.float64).eval()
    held = [s for s in read_samples(tiny_data) if s.split == "heldout"][:6]
    replayed, online = [], Counter()
    with torch.no_grad():
        for s in held:
            prompt = list(s.input_ids[: s.prompt_len])
            tokens, produced = _online_greedy(drafter, frozen, model, prompt, NEW_TOKENS, 4)
            assert tokens == list(s.input_ids[s.prompt_len:])          # lossless vs generate
            online.update(produced)
            replayed.append(Sample(s.id, s.split, s.source, tuple(prompt + tokens),
                                   (0,) * len(prompt) + (1,) * len(tokens)))
    r = evaluate_tau(drafter, frozen, replayed, block_size=4)
    assert r.histogram == tuple(online.get(n, 0) for n in range(1, 5)), (r, online)
    assert r.tau == sum(n * c for n, c in online.items()) / sum(online.values())
    assert r.tau > 1.5
    assert r.ci90[0] <= r.tau <= r.ci90[1]
    # per-sample rows add up to the totals (pooling sets evaluated apart relies on them)
    assert len(r.rows) == r.samples == len(held)
    assert sum(t for t, _ in r.rows) == r.tokens and sum(n for _, n in r.rows) == r.steps
    # step by step (scripts/analysis/tau_misses.py): each active row's anchor moves on by what
    # it produced, from the prompt's end, and the steps add up to the same tau
    seqs = sorted(replayed, key=lambda s: len(s.input_ids))
    steps = list(replay_steps(drafter, frozen, seqs, 4, 2048))
    nxt = torch.tensor([s.prompt_len for s in seqs])
    for st in steps:
        assert torch.equal(st.anchor[st.active], nxt[st.active])
        assert bool((st.produced[st.active] <= st.accepted[st.active] + 1).all())
        nxt = torch.where(st.active, st.anchor + st.produced, nxt)
    assert sum(int(st.produced[st.active].sum()) for st in steps) == r.tokens


def test_several_block_sizes_share_one_target_pass(trained, tiny_data, tiny_target_dir):
    """`evaluate_tau_blocks` (one target forward per batch for every block size) gives each
    block size exactly what evaluating it alone gives."""
    out, _ = trained
    drafter = load_drafter(out / "drafter", dtype=torch.float64)
    frozen = FrozenTarget.from_model_dir(tiny_target_dir, TINY_LAYER_IDS, dtype=torch.float64)
    held = [s for s in read_samples(tiny_data) if s.split == "heldout"][:12]
    both = evaluate_tau_blocks(drafter, frozen, held, (4, 2), batch_size=5)
    assert list(both) == [4, 2]
    for blk in (2, 4):
        assert both[blk] == evaluate_tau(drafter, frozen, held, block_size=blk, batch_size=5)
    with pytest.raises(ValueError, match="block_size=5: expected 2..4"):
        evaluate_tau_blocks(drafter, frozen, held, (2, 5))


def test_resume_reaches_the_same_weights(tiny_data, tiny_target_dir, tmp_path, monkeypatch):
    full, cut = tmp_path / "full", tmp_path / "cut"
    saved = train_io.save_checkpoint

    def keep_step_10(path, drafter, opt, gen, dcfg, state):
        saved(path, drafter, opt, gen, dcfg, state)
        if state["step"] == 10:
            shutil.copy(path, tmp_path / "step10.pt")

    monkeypatch.setattr("turnspec.speculator.train.save_checkpoint", keep_step_10)
    kw = dict(max_steps=24, ckpt_every=10, log_every=8, final_eval_samples=2)
    train(_cfg(tiny_data, tiny_target_dir, full, **kw))
    cut.mkdir()
    shutil.copy(tmp_path / "step10.pt", cut / "checkpoint.pt")           # "killed" after step 10
    m = train(_cfg(tiny_data, tiny_target_dir, cut, **kw))
    assert m["steps"] == 24
    a, b = load_drafter(full / "drafter"), load_drafter(cut / "drafter")
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(x, y), name


def test_fit_total_grows_back_after_a_slow_start():
    from turnspec.speculator.train import fit_total

    slow = fit_total(step=100, elapsed_s=100.0, budget_s=1000.0, per_step_s=1.0, planned=10_000)
    assert slow == 1000
    fast = fit_total(step=200, elapsed_s=150.0, budget_s=1000.0, per_step_s=0.5, planned=10_000)
    assert fast == 200 + 1700                                      # grew with the faster rate
    assert fit_total(200, 150.0, 1000.0, 0.01, planned=5000) == 5000   # never past the plan
    assert fit_total(300, 1200.0, 1000.0, 0.5, planned=5000) == 300    # over budget: stop now


def test_time_budget_fits_the_schedule(tiny_data, tiny_target_dir, tmp_path):
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, max_steps=100_000, time_budget_s=1.5,
                   log_every=4, final_eval_samples=2))
    assert 10 <= m["steps"] < 100_000 and m["train_seconds"] < 4.0, m["train_seconds"]
    assert m["history"][-1]["lr"] < 3e-3 * 0.2                          # cosine ran its course


def test_time_budget_fits_the_step_total_early(tiny_data, tiny_target_dir, tmp_path):
    """The first fit comes at step 20 even when log_every is larger, so the warmup is sized for
    the budget's steps, not for the planned epochs (run 10 idled its first 100 steps)."""
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, max_steps=100_000, time_budget_s=4.0,
                   log_every=1000, final_eval_samples=2))
    logged = [h for h in m["history"] if "loss" in h]
    assert logged[0]["step"] == 20 and m["steps"] < 100_000
    assert logged[-1]["lr"] < 3e-3 * 0.2                                # fitted, then ran its course


def test_time_budget_is_a_hard_stop(tiny_data, tiny_target_dir, tmp_path):
    """A budget spent before the first fit stops training at the next step (a CPU smoke run
    of pipeline.sh took minutes to reach the first fit at step 20 on a 30 s budget)."""
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path, max_steps=100_000, time_budget_s=0.0,
                   log_every=1000, final_eval_samples=2))
    assert m["steps"] == 1


def test_init_from_an_exported_drafter(trained, tiny_data, tiny_target_dir, tmp_path):
    """A warm start continues from the export's weights (the way training carries across GPU
    sessions), and a config that does not match is refused with the fields that differ."""
    src_dir = trained[0] / "drafter"
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path / "warm", init_from=str(src_dir),
                   max_steps=1, lr=1e-12, weight_decay=0.0, log_every=1))
    src, warm = load_drafter(src_dir), load_drafter(tmp_path / "warm" / "drafter")
    for (name, x), (_, y) in zip(src.state_dict().items(), warm.state_dict().items(), strict=True):
        assert torch.allclose(x, y, rtol=1e-2, atol=1e-6), name
    assert m["tau"]["tools-heldout"] == pytest.approx(trained[1]["tau"]["tools-heldout"], rel=0.02)
    assert m["config"]["init_from"] == str(src_dir)
    with pytest.raises(ValueError, match="num_hidden_layers"):
        train(_cfg(tiny_data, tiny_target_dir, tmp_path / "bad", init_from=str(src_dir),
                   num_layers=2, max_steps=1))


def test_grow_layers_starts_as_the_source(trained, tiny_data, tiny_target_dir, tmp_path):
    """--grow-layers: a 1-layer export grown to 2 layers starts as the same function (same
    held-out tau after a step at lr ~0): the first layer is the source's, the added one's output
    projections are zero; a source deeper than the run, or growing with no source, is refused."""
    src_dir = trained[0] / "drafter"
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path / "grown", init_from=str(src_dir),
                   grow_layers=True, num_layers=2, max_steps=1, lr=1e-12, weight_decay=0.0,
                   log_every=1))
    src, grown = load_drafter(src_dir), load_drafter(tmp_path / "grown" / "drafter")
    assert len(grown.layers) == 2
    for name, x in src.state_dict().items():
        assert torch.allclose(x, grown.state_dict()[name], rtol=1e-2, atol=1e-6), name
    added = grown.layers[1]
    assert not added.self_attn.o_proj.weight.abs().max() > 1e-6
    assert not added.mlp.down_proj.weight.abs().max() > 1e-6
    assert added.mlp.up_proj.weight.abs().max() > 1e-3          # the rest keeps its random init
    assert m["tau"]["tools-heldout"] == pytest.approx(trained[1]["tau"]["tools-heldout"], rel=0.02)
    with pytest.raises(ValueError, match="expected --layers >= 2"):
        train(_cfg(tiny_data, tiny_target_dir, tmp_path / "shrink", num_layers=1, max_steps=1,
                   init_from=str(tmp_path / "grown" / "drafter"), grow_layers=True))
    with pytest.raises(ValueError, match="grow_layers: expected init_from"):
        _cfg(tiny_data, tiny_target_dir, tmp_path / "none", grow_layers=True)


def test_grow_widens_the_mlp_and_starts_as_the_source(trained, tiny_data, tiny_target_dir,
                                                     tmp_path):
    """--grow with --intermediate-size: the source's MLP units come first, the added units have
    random gate/up rows and zero down_proj columns, so the wider drafter starts as the source's
    function; a narrower MLP than the source's is refused."""
    src_dir = trained[0] / "drafter"
    src = load_drafter(src_dir)
    width = src.config.intermediate_size
    m = train(_cfg(tiny_data, tiny_target_dir, tmp_path / "wide", init_from=str(src_dir),
                   grow_layers=True, intermediate_size=2 * width, max_steps=1, lr=1e-12,
                   weight_decay=0.0, log_every=1))
    wide = load_drafter(tmp_path / "wide" / "drafter")
    assert wide.config.intermediate_size == 2 * width
    for name, x in src.state_dict().items():
        y = wide.state_dict()[name]
        y = y[:, :width] if name.endswith("down_proj.weight") else y[: x.shape[0]]
        assert torch.allclose(x, y, rtol=1e-2, atol=1e-6), name
    mlp = wide.layers[0].mlp
    assert not mlp.down_proj.weight[:, width:].abs().max() > 1e-6
    assert mlp.up_proj.weight[width:].abs().max() > 1e-3
    assert m["tau"]["tools-heldout"] == pytest.approx(trained[1]["tau"]["tools-heldout"], rel=0.02)
    with pytest.raises(ValueError, match=f"expected --layers >= 1 and --intermediate-size >= {2 * width}"):
        train(_cfg(tiny_data, tiny_target_dir, tmp_path / "narrow", max_steps=1,
                   init_from=str(tmp_path / "wide" / "drafter"), grow_layers=True))
    with pytest.raises(ValueError, match="intermediate_size"):
        train(_cfg(tiny_data, tiny_target_dir, tmp_path / "nogrow", max_steps=1,
                   init_from=str(tmp_path / "wide" / "drafter")))


def test_eval_sets_score_each_set_and_refuse_one_with_nothing_held_out(trained, tiny_data,
                                                                        tiny_target_dir, tmp_path):
    """`speculator eval` over sets: each set's held-out splits at each block size, JSON per set;
    a set with no held-out turns fails before any model loads (not an empty table)."""
    from turnspec.speculator.evaluate import evaluate_sets

    out, _ = trained
    train_only = tmp_path / "train-only"
    train_only.mkdir()
    (train_only / "samples.jsonl").write_text("".join(
        s.to_json() + "\n" for s in read_samples(tiny_data) if s.split == "train"))
    kw = dict(drafter=str(out / "drafter"), model_dir=str(tiny_target_dir), block_sizes=[2, 4],
              samples=6, max_len=64, device="cpu", with_train=False)
    with pytest.raises(ValueError, match=r"train-only: no held-out turns to score \(found "
                                         r"\{'generic/train': \d+, 'tools/train': \d+\}\)"):
        next(evaluate_sets([tiny_data, train_only], json_out=None, **kw))
    js = tmp_path / "tau.json"
    (outs,) = list(evaluate_sets([tiny_data], json_out=[js], **kw))
    assert [o["block_size"] for o in outs] == [2, 4]
    for o in outs:
        assert set(o["tau"]) == {"generic-heldout", "tools-heldout"}
        assert all(1.0 <= t <= o["block_size"] for t in o["tau"].values())
    assert json.loads(js.read_text())["by_block"]["4"]["tau"] == outs[1]["tau"]


def test_lookup_replay_takes_copies_and_leaves_the_rest(trained, tiny_target_dir):
    """`--lookup` replay: a response that copies an earlier span is drafted from the copy once
    its first two tokens match; where no token pair repeats there is nothing to take, and the
    replay is exactly the plain one."""
    out, _ = trained
    drafter = load_drafter(out / "drafter", dtype=torch.float64)
    frozen = FrozenTarget.from_model_dir(tiny_target_dir, TINY_LAYER_IDS, dtype=torch.float64)
    order = torch.randperm(120, generator=torch.Generator().manual_seed(3)).add(1).tolist()

    def sample(name: str, prompt: list[int], response: list[int]) -> Sample:
        return Sample(name, "heldout", "tools", tuple(prompt + response),
                      (0,) * len(prompt) + (1,) * len(response))

    span, filler = order[:40], order[40:50]
    copy = sample("copy", filler[:5] + span + filler[5:], span)
    plain = evaluate_tau(drafter, frozen, [copy], block_size=4)
    looked = evaluate_tau_blocks(drafter, frozen, [copy], (4,), lookup=True)[4]
    assert looked.tau > 3.0 > plain.tau, (looked, plain)
    # both from one target pass (`eval --lookup`): the same as each alone
    assert evaluate_tau_runs(drafter, frozen, [copy], (4, 2), (False, True)) == {
        (4, False): plain, (4, True): looked, (2, False): evaluate_tau(drafter, frozen, [copy], block_size=2),
        (2, True): evaluate_tau_blocks(drafter, frozen, [copy], (2,), lookup=True)[2]}
    distinct = sample("distinct", order[:30], order[30:60])
    assert evaluate_tau_blocks(drafter, frozen, [distinct], (4,), lookup=True)[4] == \
        evaluate_tau(drafter, frozen, [distinct], block_size=4)
