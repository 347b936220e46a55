"""Speculation is lossless: greedy output is token-identical to plain greedy (tiny random
targets and drafters, many seeds, batch > 1, block sizes 2..16), and sampled output has the
target's distribution (chi-squared on a tiny vocabulary)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from scipy import stats as scipy_stats

from tests.engine.model.test_cpu_linear import needs_onednn_bf16
from tests.engine.tiny import make_drafter, make_target, make_tokenizer
from turnspec.engine.local.config import LocalEngineConfig
from turnspec.engine.local.core import EngineCore
from turnspec.engine.protocol import GenerateRequest, SamplingParams


def run(core: EngineCore, prompts: list[list[int]], sampling: SamplingParams,
        blocks: list[int | None] | None = None) -> tuple[list[list[int]], list]:
    for i, p in enumerate(prompts):
        core.add(GenerateRequest(f"r{i}", p, sampling, spec_block_size=(blocks or [None] * len(prompts))[i]))
    out: dict[str, list[int]] = {f"r{i}": [] for i in range(len(prompts))}
    finals = {}
    while core.has_work():
        for d in core.step():
            out[d.request_id].extend(d.token_ids)
            if d.finished:
                finals[d.request_id] = d
    return [out[f"r{i}"] for i in range(len(prompts))], [finals[f"r{i}"] for i in range(len(prompts))]


def engine(path: Path, vocab: int, drafter=None, dtype: str = "float64", max_batch: int = 32,
           min_confidence: float = 0.0, lookup: bool = False, branches: int = 1,
           plan: str = "first", branch_rows: int | None = None,
           datastore: str | None = None, learn: bool = False) -> EngineCore:
    # policy "always": these properties must hold on every speculative step, and a random
    # drafter would make the adaptive policy pause early (test_spec_policy.py covers pauses);
    # whole DFlash blocks verified unless a test asks for truncation or prompt lookup
    cfg = LocalEngineConfig(model_dir=str(path), dtype=dtype, block_size=4, kv_memory_gb=0.05,
                            max_batch=max_batch, spec_policy="always",
                            spec_min_confidence=min_confidence, spec_lookup=lookup,
                            spec_branches=branches, spec_branch_plan=plan,
                            spec_branch_rows=branch_rows, spec_datastore=datastore,
                            spec_datastore_learn=learn)
    return EngineCore(cfg, tokenizer=make_tokenizer(vocab), drafter=drafter)


def lookup_below(core: EngineCore, below: float) -> None:
    """Rows whose drafter expects fewer than `below` drafts take the lookup continuation."""
    core.speculation.options = replace(core.speculation.options, lookup_below=below)


def greedy_case(tmp_path: Path, vocab: int, seed: int, lengths: tuple[int, ...],
                max_tokens: int) -> tuple[Path, list[list[int]], SamplingParams, list[list[int]]]:
    """A tiny target, prompts of `lengths` tokens, greedy sampling, and the target's plain
    greedy answers to them."""
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(2, vocab, (int(n),), generator=g).tolist() for n in lengths]
    sampling = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    plain, _ = run(engine(target, vocab), prompts, sampling)
    return target, prompts, sampling, plain


@pytest.mark.parametrize("seed", range(4))
def test_greedy_speculation_is_token_identical(tmp_path: Path, seed: int) -> None:
    vocab = 12 + 3 * seed  # small vocabularies: random drafts get accepted often enough
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(2, vocab, (int(n),), generator=g).tolist() for n in (3, 9, 17, 6)]
    sampling = SamplingParams(max_tokens=24, ignore_eos=True)
    plain, _ = run(engine(target, vocab), prompts, sampling)
    for block in (2, 7, 16):
        spec_core = engine(target, vocab, make_drafter(target, block, seed))
        # per-request block sizes in one batch: the drafter's, smaller ones, and 0 (off)
        got, finals = run(spec_core, prompts, sampling, [None, max(block // 2, 1), 0, None])
        assert got == plain, f"seed={seed} block={block}"
        spec = finals[0].spec
        assert spec is not None and spec.verify_steps > 0
        assert spec.committed_tokens >= spec.verify_steps  # tau >= 1
        for r in (0, 3) + ((1,) if block >= 4 else ()):  # B=1 (row 1 at block 2) is plain decode
            s = finals[r].spec  # every decode token came from a verify step, none past max_tokens
            assert s.committed_tokens == len(got[r]) - 1, f"seed={seed} block={block} row={r}"
            assert s.accepted_tokens <= s.committed_tokens
    # acceptance must actually happen somewhere across the blocks (not a vacuous test)
    assert any(f.spec and f.spec.accepted_tokens > 0 for f in finals)


@pytest.mark.parametrize("seed,theta", [(0, 0.5), (1, 0.8), (2, 0.3)])
def test_confidence_truncated_verify_is_token_identical(tmp_path: Path, seed: int,
                                                        theta: float) -> None:
    """Verifying only the drafts the drafter is confident about (spec_min_confidence) commits
    fewer drafts per step, never different tokens; the verify pass really gets shorter."""
    vocab = 12
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    # prompts longer than a block, so every extend of width <= block is a verify pass
    prompts = [torch.randint(2, vocab, (int(n),), generator=g).tolist() for n in (9, 12, 17, 10)]
    sampling = SamplingParams(max_tokens=24, ignore_eos=True)
    plain, _ = run(engine(target, vocab), prompts, sampling)
    verified = {}
    for th in (0.0, theta):
        spec_core = engine(target, vocab, make_drafter(target, 8, seed), min_confidence=th)
        widths: list[int] = []
        extend = spec_core.runner.extend

        def recording_extend(rows, extend=extend, widths=widths):
            widths.append(max(len(t) for _, t in rows))
            return extend(rows)

        spec_core.runner.extend = recording_extend
        got, _ = run(spec_core, prompts, sampling, [None, 3, 0, None])
        assert got == plain, f"seed={seed} theta={th}"
        verified[th] = [w for w in widths if w <= 8]  # the verify passes
    assert sum(verified[theta]) < sum(verified[0.0]), verified  # shorter verify passes
    assert max(verified[theta]) > 1  # and still some drafts verified


@pytest.mark.parametrize("seed", range(4))
def test_branched_verify_keeps_greedy_identical(tmp_path: Path, monkeypatch, seed: int) -> None:
    """Greedy rows verify several blocks in one pass (the drafter's, the lookup continuation,
    the drafter's under other first tokens) and keep the one accepted furthest: output stays
    plain greedy (the winning branch's KV is copied into the sequence's own slots, so every
    later token depends on that copy), other branches win at times, and a sampled request in
    the same batch never branches."""
    from turnspec.engine.local import spec_step
    from turnspec.engine.local.shadow_kv import ShadowKV

    vocab = 12
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    motif = torch.randint(2, vocab, (5,), generator=g).tolist()
    prompts = [motif * 3, motif * 2 + [3, 4], torch.randint(2, vocab, (11,), generator=g).tolist(),
               motif * 4 + [5]]
    sampling = SamplingParams(max_tokens=32, ignore_eos=True)
    plain, _ = run(engine(target, vocab), prompts, sampling)
    adopted: list[int] = []
    real = ShadowKV.adopt

    def counting_adopt(self, wins):
        adopted.extend(count for _, _, count in wins)
        return real(self, wins)

    monkeypatch.setattr(ShadowKV, "adopt", counting_adopt)
    for lookup, block, n, plan in ((True, 8, 2, "first"), (False, 16, 2, "first"),
                                   (True, 8, 4, "first"), (False, 16, 5, "first"),
                                   (True, 8, 3, "planned"), (False, 16, 4, "planned"),
                                   # more branches than the toy vocabulary has other tokens
                                   (True, 16, 16, "planned"), (True, 8, 16, "first")):
        spec_core = engine(target, vocab, make_drafter(target, block, seed), lookup=lookup,
                           branches=n, plan=plan)
        before = len(adopted)
        got, finals = run(spec_core, prompts, sampling)
        case = f"seed={seed} lookup={lookup} branches={n} plan={plan}"
        assert got == plain, case
        assert all(f.spec.committed_tokens >= f.spec.verify_steps for f in finals)
        assert len(adopted) > before, f"no other branch ever won: {case}"
    # a step's budget of extra rows (--spec-branch-rows): shared out, output unchanged
    shadow_rows: list[int] = []
    real_shadows = ShadowKV.shadows

    def counting_shadows(self, seqs, block):
        shadow_rows.append(len(seqs))
        return real_shadows(self, seqs, block)

    monkeypatch.setattr(ShadowKV, "shadows", counting_shadows)
    capped = engine(target, vocab, make_drafter(target, 8, seed), lookup=True, branches=8,
                    plan="planned", branch_rows=3)
    shadows = capped.speculation.shadows
    assert shadows.max_rows == 3 and len(shadows.pool) == 3 * shadows.per_row
    got, _ = run(capped, prompts, sampling)
    assert got == plain, f"seed={seed} branch_rows=3"
    assert shadow_rows and max(shadow_rows) == 3
    monkeypatch.setattr(ShadowKV, "shadows", real_shadows)
    # a sampled row rides in the same batch and is never branched
    mixed = engine(target, vocab, make_drafter(target, 8, seed), lookup=True, branches=3,
                   plan="planned")
    mixed.add(GenerateRequest("sampled", prompts[0], SamplingParams(max_tokens=16, temperature=0.8,
                                                                    seed=seed, ignore_eos=True)))
    mixed.add(GenerateRequest("greedy", prompts[1], sampling))
    branched: list[list[bool]] = []  # per step: is the row of each extra block greedy
    real_plan = spec_step.plan_step

    def recording_plan(rows, *args):
        plan = real_plan(rows, *args)
        branched.append([rows[r].greedy for r in plan.owner[len(rows):]])
        return plan

    monkeypatch.setattr(spec_step, "plan_step", recording_plan)
    tokens: dict[str, list[int]] = {"sampled": [], "greedy": []}
    while mixed.has_work():
        for d in mixed.step():
            tokens[d.request_id].extend(d.token_ids)
    assert tokens["greedy"] == plain[1] and len(tokens["sampled"]) == 16
    assert any(branched) and all(all(extras) for extras in branched)


def test_datastore_branch_keeps_greedy_identical(tmp_path: Path, monkeypatch) -> None:
    """A datastore of the target's own answers to the same prompts drafts exactly what it will
    say wherever its last 3 tokens occurred there: its branch wins, output stays plain greedy;
    without verify branches to ride on it is refused."""
    import json

    from turnspec.engine.local.shadow_kv import ShadowKV
    from turnspec.engine.spec.proposers.datastore import TokenDatastore

    vocab, seed = 12, 1
    target, prompts, sampling, plain = greedy_case(tmp_path, vocab, seed, (5, 9, 13), 32)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"completion": p}) + "\n" for p in plain))
    drafted, adopted = [], []
    real_draft, real_adopt = TokenDatastore.propose, ShadowKV.adopt

    def counting_draft(self, tokens, width):
        drafted.append(real_draft(self, tokens, width).tokens)
        return real_draft(self, tokens, width)

    def counting_adopt(self, wins):
        adopted.extend(wins)
        return real_adopt(self, wins)

    monkeypatch.setattr(TokenDatastore, "propose", counting_draft)
    monkeypatch.setattr(ShadowKV, "adopt", counting_adopt)
    core = engine(target, vocab, make_drafter(target, 8, seed), lookup=True, branches=2,
                  datastore=str(answers))
    got, _ = run(core, prompts, sampling)
    assert got == plain
    assert any(len(d) >= 2 for d in drafted) and adopted
    with pytest.raises(ValueError, match="spec_datastore: its block rides as a verify branch"):
        engine(target, vocab, make_drafter(target, 8, seed), lookup=True, datastore=str(answers))
    # a store already read (bench spec's) is used as it is, and only for cfg.spec_datastore
    read = TokenDatastore.from_path(answers)
    shared = EngineCore(core.cfg, tokenizer=core.tokenizer, drafter=core.drafter, datastore=read)
    assert shared.speculation.store is read
    with pytest.raises(ValueError, match="datastore: given without cfg.spec_datastore"):
        EngineCore(replace(core.cfg, spec_datastore=None), tokenizer=core.tokenizer,
                   drafter=core.drafter, datastore=read)
    with pytest.raises(ValueError, match="spec_datastore: .* does not exist"):
        engine(target, vocab, make_drafter(target, 8, seed), branches=2,
               datastore=str(tmp_path / "missing"))


def test_branches_need_a_drafter(tmp_path: Path) -> None:
    target = make_target(tmp_path, 12, 0)
    with pytest.raises(ValueError, match="spec_branches=2: expected a speculator"):
        engine(target, 12, branches=2)


@pytest.mark.parametrize("seed", range(3))
def test_prompt_lookup_drafts_keep_greedy_identical(tmp_path: Path, monkeypatch, seed: int) -> None:
    """Rows whose drafter expects little take prompt-lookup continuations (repetitive prompts
    make them exist); output stays plain greedy, and the lookup drafts really were used."""
    from turnspec.engine.local import spec_step

    vocab = 12
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    motif = torch.randint(2, vocab, (5,), generator=g).tolist()
    prompts = [motif * 3, motif * 2 + [3, 4], torch.randint(2, vocab, (11,), generator=g).tolist()]
    sampling = SamplingParams(max_tokens=24, ignore_eos=True)
    plain, _ = run(engine(target, vocab), prompts, sampling)
    swaps: list[bool] = []
    real = spec_step.plan_step

    def counting_lookup(rows, drafted, *args):
        plan = real(rows, drafted, *args)
        swaps.append(plan.blocks[: len(rows)] != drafted.drafts)
        return plan

    monkeypatch.setattr(spec_step, "plan_step", counting_lookup)
    spec_core = engine(target, vocab, make_drafter(target, 8, seed), min_confidence=0.1, lookup=True)
    lookup_below(spec_core, 8.0)  # every row asks for a lookup continuation
    got, _ = run(spec_core, prompts, sampling)
    assert got == plain, f"seed={seed}"
    assert any(swaps), "no lookup continuation was ever swapped in"


@pytest.mark.parametrize("lookup", [False, True])
def test_sampled_speculation_has_target_distribution(tmp_path: Path, lookup: bool) -> None:
    """Two sampled tokens after a fixed prompt: the empirical joint distribution of
    (t1, t2) under speculation matches the target's exact joint (chi-squared). With lookup,
    a repetitive prompt and a high lookup_below make prompt-lookup drafts verify instead."""
    from transformers import AutoModelForCausalLM

    vocab = 6
    target = make_target(tmp_path, vocab, seed=3, layers=4, hidden=32)
    prompt = [2, 3, 4, 2, 3] if lookup else [2, 3, 4, 5]
    hf = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float64).eval()
    with torch.no_grad():
        p1 = torch.softmax(hf(torch.tensor([prompt])).logits[0, -1], -1)
        seqs = torch.tensor([prompt + [t] for t in range(vocab)])
        p2 = torch.softmax(hf(seqs).logits[:, -1], -1)
    exact = (p1.unsqueeze(1) * p2).flatten()  # [vocab * vocab]

    core = engine(target, vocab, make_drafter(target, 4, seed=3), max_batch=256, lookup=lookup)
    lookup_below(core, 8.0)
    n = 3000
    counts = torch.zeros(vocab * vocab)
    for start in range(0, n, 250):
        m = min(250, n - start)
        outs = []
        for i in range(m):
            core.add(GenerateRequest(f"s{start + i}", prompt, SamplingParams(
                temperature=1.0, max_tokens=2, ignore_eos=True, seed=start + i)))
        got: dict[str, list[int]] = {}
        while core.has_work():
            for d in core.step():
                got.setdefault(d.request_id, []).extend(d.token_ids)
        outs = list(got.values())
        for o in outs:
            counts[o[0] * vocab + o[1]] += 1
    assert counts.sum().item() == n
    keep = exact * n >= 5  # chi-squared needs expected counts >= 5; pool the rest into one cell
    obs = torch.cat([counts[keep], counts[~keep].sum().unsqueeze(0)])
    exp = torch.cat([exact[keep], exact[~keep].sum().unsqueeze(0)]) * n
    exp = exp * (obs.sum() / exp.sum())  # float64 rounding only
    _, p_value = scipy_stats.chisquare(obs.numpy(), exp.numpy())
    assert p_value > 1e-3, f"chi2 p={p_value}: speculative sampling drifted from the target"
    tv = 0.5 * (counts / n - exact).abs().sum().item()
    assert tv < 0.06


@pytest.mark.parametrize("native_bf16", [pytest.param(True, marks=needs_onednn_bf16), False])
def test_bf16_draft_head_keeps_greedy_identical(tmp_path: Path, monkeypatch, native_bf16: bool) -> None:
    """fp32 on CPU: with native bf16 the drafter runs in bf16 (its context rows and a bf16 copy
    of the LM head too); the target still verifies in fp32, so output equals plain greedy."""
    monkeypatch.setattr("turnspec.engine.local.spec_build.cpu_has_native_bf16", lambda: native_bf16)
    vocab, seed = 15, 1
    target = make_target(tmp_path, vocab, seed)
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(2, vocab, (int(n),), generator=g).tolist() for n in (4, 11, 7)]
    sampling = SamplingParams(max_tokens=24, ignore_eos=True)
    plain, _ = run(engine(target, vocab, dtype="float32"), prompts, sampling)
    spec_core = engine(target, vocab, make_drafter(target, 6, seed), dtype="float32")
    assert (spec_core.runner.draft_head is not None) == native_bf16
    assert spec_core.runner.dk_pools.dtype == (torch.bfloat16 if native_bf16 else torch.float32)
    got, finals = run(spec_core, prompts, sampling)
    assert got == plain
    assert any(f.spec and f.spec.accepted_tokens > 0 for f in finals)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kv_budget_counts_each_pool_in_its_own_dtype(tmp_path: Path, dtype: str) -> None:
    """kv_memory_gb covers the target's K/V and the drafter's context K/V, each in the dtype
    it is stored in (the drafter runs in bf16 on CPUs with bf16 dot products)."""
    path = make_target(tmp_path, 61, seed=0)
    core = engine(path, 61, make_drafter(path, 4, 0), dtype=dtype)
    r = core.runner
    pools = (r.k_pools, r.v_pools, r.dk_pools, r.dv_pools)
    used = sum(p.numel() * p.element_size() for p in pools)
    per_block = used / core.blocks.num_blocks
    budget = core.cfg.kv_memory_gb * 2**30
    assert budget - per_block < used <= budget


def test_default_block_is_the_drafters_on_cpu_too(tmp_path: Path) -> None:
    """No per-device cap: with confidence-truncated verify B=16 leads B=8 on CPU as well
    (docs/history/notes/cpu-policy-backoff.md), so the engine serves the trained block."""
    vocab = 14
    target = make_target(tmp_path, vocab, 0)
    core = engine(target, vocab, make_drafter(target, 12, 0))
    assert core.runner.device.type == "cpu" and core.spec_block == 12
