"""One DFlash speculative step for a decode batch, read top to bottom:

    draft  : one drafter pass proposes B-1 tokens after each anchor (the pending token)
    verify : one target pass over [anchor, d1..d_{B-1}] (KV written, hidden taps kept)
    accept : y_k = the target's choice at block position k (argmax, or a sample from its
             filtered distribution, grammar-masked); a = leading k with d_{k+1} == y_k
    commit : tokens y_0..y_a (a accepted drafts + one bonus); target KV for anchor..d_a is
             kept (the rest is overwritten later), drafter context rows appended for them.

Lossless: every committed y_k was chosen by the target from the exact prefix it would have
seen decoding one token at a time, so greedy output is identical and sampled output has the
target's distribution (the drafter is deterministic; see docs/dflash.md §2).
Per-request block sizes: drafts past a row's block are replaced by -1, which never matches.
Rows the policy has paused (spec_policy.py) ride along with block 1: a plain step for them.
Confidence-truncated verify (policy.min_confidence > 0): a row verifies only the drafts whose
cumulative drafter probability stays at or above the threshold, and the verify pass shrinks to
the longest such row. Where the verify's cost grows with its length (a CPU: ~0.6-1 ms per
token), drafts that would almost surely be rejected are not paid for; still lossless, since a
shorter block only commits fewer of the target's own choices.
Prompt lookup (policy.lookup): a row whose drafter expects little of its block (the sum of the
drafts' cumulative probabilities, i.e. its expected accepted drafts, below
policy.lookup_below), whose continuation agrees with its first drafts and runs longer
(LOOKUP_AGREE), or whose continuation's source matches its last LOOKUP_MATCH tokens and offers
more than the drafter expects, takes the continuation of the latest earlier occurrence of its
last tokens instead (ngram.py), when there is one: copies from the context that the drafter
cuts short.
Multi-branch verify (`branches`, branch.py; 16 on CUDA, one on CPU): a greedy row also
verifies the block the lookup rule did not pick, the drafter's block under its next guesses
(branch_plan.py) and, with a datastore, the continuation the target's earlier answers took
(datastore.py), as shadow rows of the same pass, and commits whichever the target accepts
furthest; each branch alone is verified exactly as above, so greedy output stays identical.
"""

from __future__ import annotations

import time

import torch

from turnspec.engine.local.branch import Branches
from turnspec.engine.local.branch_plan import apply_swaps, plan_swaps
from turnspec.engine.local.grammar_mask import mask_block
from turnspec.engine.local.ngram import ngram_lookup
from turnspec.engine.local.runner import ModelRunner
from turnspec.engine.local.sampling import sample_rows
from turnspec.engine.local.sequence import Sequence
from turnspec.engine.local.spec_policy import SpecPolicy
from turnspec.kernels.dflash_accept import dflash_accept

# A lookup continuation whose first tokens are the drafter's own first drafts is taken even when
# the drafter is confident, if it runs longer: the drafter agrees with the copy, so the copy's
# tail is likely right too. 2 was best of 1-2 on seed-3 held-out turns (offline replay, B=16:
# τ 5.36 -> 5.58), and held on seed 4 (5.08 -> 5.24); docs/history/notes/drafter-run7-synthetic.md.
LOOKUP_AGREE = 2
# A continuation whose source matches the last 6+ tokens is a copy in progress (a tool call
# repeated from an earlier turn: 127 of SmolLM2's 171 calls on the independent voice turns) and
# is taken, however confident the drafter, when it offers more tokens than the drafter expects
# to land (expected + 1). Offline replay, default drafter, B=16, dev CPU: independent voice
# 4.26 -> 4.95 on 64 turns, 4.28 -> 4.90 on 48 others; 4 and 8 did no better (docs/dflash.md).
LOOKUP_MATCH = 6


def spec_decode(runner: ModelRunner, policy: SpecPolicy, seqs: list[Sequence],
                branches: Branches | None = None) -> tuple[list[list[int]], list[int]]:
    """One speculative step for `seqs` (a decode batch): the tokens each row commits and how
    far each row's computed KV advances. `branches`: greedy rows also verify other candidate
    blocks (`_extra_blocks`) and keep the one accepted furthest (branch.py)."""
    spec_rows = [policy.speculates(s) for s in seqs]  # paused rows verify their anchor only
    blocks = [s.spec_block if on else 1 for s, on in zip(seqs, spec_rows, strict=True)]
    block = max(blocks)

    # draft: [b, B-1] greedy proposals; rows with a smaller block get -1 past their limit
    theta = policy.min_confidence
    extra = branches.extra if branches is not None else 0  # shadow rows a greedy row may have
    planned = branches is not None and branches.plan == "planned"
    drafted = runner.draft(seqs, block, confidence=theta > 0 or policy.lookup, alternatives=extra,
                           every_position=planned)
    drafts, probs = drafted.tokens, drafted.probs
    dev = drafts.device
    limit = torch.tensor([max(b, 1) - 1 for b in blocks], device=dev)
    slots = torch.arange(block - 1, device=dev).unsqueeze(0)
    expected = None
    if probs is not None:
        reach = probs.cumprod(dim=-1) * (slots < limit.unsqueeze(1))  # P(draft k is accepted)
        # expected accepted drafts per row (for lookup's choice): a host sync of its own
        expected = reach.sum(dim=-1).tolist() if policy.lookup else None
        if theta > 0:  # drafts worth verifying: cumulative drafter probability >= theta
            limit = torch.minimum(limit, (reach >= theta).sum(dim=-1))
    lead = drafts[:, :LOOKUP_AGREE].tolist() if policy.lookup else None  # before truncation
    drafts = torch.where(slots < limit.unsqueeze(1), drafts, torch.full_like(drafts, -1))
    # host sync #1: the block's tokens (grammar masks need them), with the other first drafts
    drafts_host, firsts = _to_host(drafts, drafted.firsts)
    own = [row[:] for row in drafts_host] if branches is not None else []  # the drafter's blocks
    # each speculating row's lookup continuation and its source's match, found once for both
    conts = _continuations(seqs, blocks, spec_rows) if policy.lookup or branches is not None else []
    swapped = policy.lookup and _lookup(conts, expected, lead, drafts_host, policy.lookup_below)
    if planned:  # the drafter's block with the swaps that add the most expected drafts
        wanted = [on and s.request.sampling.greedy for s, on in zip(seqs, spec_rows, strict=True)]
        # a row gets at most its share of the step's extra rows (_extra_blocks): plan no more
        share = min(extra, -(-branches.max_rows // max(sum(wanted), 1)))
        swaps = planned_swaps(own, drafted.probs, drafted.guesses, drafted.guess_probs, share,
                              wanted)
    else:
        swaps = [first_swaps(o, f) for o, f in zip(own, firsts, strict=True)] if firsts else []
    stored = _stored(seqs, spec_rows, blocks, branches)
    alt_rows, alt_drafts = _extra_blocks(seqs, spec_rows, conts, own, drafts_host, swaps, extra,
                                         branches.max_rows, stored) if branches is not None else ([], [])
    if alt_rows:  # the extra branches ride as extra rows of the same verify pass
        drafts_host = drafts_host + alt_drafts
    if swapped or alt_rows:  # the blocks to verify changed on the host: one copy back
        drafts = torch.tensor(drafts_host, dtype=drafts.dtype, device=dev)
    if probs is not None or alt_rows:  # the verify pass shrinks to the longest row still verifying
        block = 1 + max((sum(1 for t in row if t >= 0) for row in drafts_host), default=0)
        drafts, drafts_host = drafts[:, : block - 1], [row[: block - 1] for row in drafts_host]

    # verify: target over [anchor, drafts]; -1 slots are fed as token 0 and never accepted
    b = len(seqs)
    alt_seqs = [seqs[r] for r in alt_rows]
    shadows = branches.shadows(alt_seqs, block) if alt_rows else []
    vseqs = seqs + alt_seqs
    rows = [(row, [s.token_ids[-1]] + [max(t, 0) for t in d])
            for row, s, d in zip(seqs + shadows, vseqs, drafts_host, strict=True)]
    out = runner.extend(rows)
    logits = runner.logits(out.hidden)  # [b (+ branches), B, V] fp32
    mask_block(vseqs, logits, drafts_host)
    params = [s.request.sampling for s in vseqs for _ in range(block)]
    gens = [s.generator for s in vseqs for _ in range(block)]
    target = sample_rows(logits.view(len(vseqs) * block, -1), params, gens).view(len(vseqs), block)

    # accept: longest matching prefix + bonus
    accept_len, _bonus = dflash_accept(drafts, target)
    packed = torch.cat([accept_len.to(torch.int64).unsqueeze(1), target], dim=1).tolist()  # sync #2
    tap_row = list(range(b))  # the verify row whose tokens each sequence commits
    for i, r in enumerate(alt_rows):
        if packed[b + i][0] > packed[tap_row[r]][0]:
            tap_row[r] = b + i
    wins = []  # a shadow won: its tokens and KV become the sequence's
    for r in dict.fromkeys(alt_rows):
        if tap_row[r] != r:
            packed[r] = packed[tap_row[r]]
            wins.append((seqs[r], shadows[tap_row[r] - b], packed[r][0] + 1))
    if wins:
        branches.adopt(wins)

    # commit
    now = time.perf_counter()
    new_tokens, advance, ctx_items = [], [], []
    for r, (seq, row) in enumerate(zip(seqs, packed[:b], strict=True)):
        a = row[0]
        new_tokens.append(row[1:a + 2])
        advance.append(a + 1)
        ctx_items.append((seq, tap_row[r], seq.num_computed, a + 1))
        if not spec_rows[r]:
            policy.after_plain_step(seq)
            continue
        seq.spec.add_step(a + 1, now if seq.request.trace_steps else None)
        policy.after_spec_step(seq, a + 1)
    if out.taps is not None:
        runner.store_context(ctx_items, out.taps)
    return new_tokens, advance


def _continuations(seqs: list[Sequence], blocks: list[int],
                   spec_rows: list[bool]) -> list[tuple[list[int], int] | None]:
    """Per row, `ngram_lookup`'s (continuation, match) over its tokens, up to its block - 1;
    None for rows not speculating."""
    return [ngram_lookup(seq.token_ids, blocks[r] - 1) if spec_rows[r] else None
            for r, seq in enumerate(seqs)]


def _to_host(drafts: torch.Tensor, firsts: torch.Tensor | None) -> tuple[list[list[int]], list[list[int]]]:
    """The drafts [b, B-1] and the other first drafts [b, k] (if any) as host lists, in one sync."""
    if firsts is None:
        return drafts.tolist(), []
    rows, w = torch.cat([drafts, firsts.to(drafts.dtype)], dim=1).tolist(), drafts.shape[1]
    return [row[:w] for row in rows], [row[w:] for row in rows]


def _stored(seqs: list[Sequence], spec_rows: list[bool], blocks: list[int],
            branches: Branches | None) -> list[list[int]]:
    """Each greedy speculating row's datastore draft (datastore.py), [] for the others; none
    without a datastore."""
    store = branches.datastore if branches is not None else None
    if store is None:
        return []
    return [store.draft(s.token_ids, blocks[r] - 1) if spec_rows[r] and s.request.sampling.greedy
            else [] for r, s in enumerate(seqs)]


def _extra_blocks(seqs: list[Sequence], spec_rows: list[bool],
                  conts: list[tuple[list[int], int] | None], own: list[list[int]],
                  chosen: list[list[int]], swapped: list[list[list[int]]], extra: int,
                  max_rows: int, stored: list[list[int]] | None = None) -> tuple[list[int], list[list[int]]]:
    """`branch_candidates` of each greedy speculating row, at most `max_rows` in all, handed
    out by rank (every row's first, then every row's second...): (rows, blocks), a row index
    per extra block. `stored`: each row's datastore draft (`_stored`), if any."""
    per_row = {r: branch_candidates(chosen[r], own[r], conts[r][0],
                                    swapped[r] if swapped else [], extra,
                                    stored[r] if stored else [])
               for r, seq in enumerate(seqs) if spec_rows[r] and seq.request.sampling.greedy}
    rows, alts = [], []
    for rank in range(extra):
        for r, cands in per_row.items():
            if rank < len(cands) and len(rows) < max_rows:
                rows.append(r)
                alts.append(cands[rank])
    return rows, alts


def branch_candidates(chosen: list[int], own: list[int], cont: list[int],
                      swapped: list[list[int]], extra: int,
                      stored: list[int] | None = None) -> list[list[int]]:
    """Up to `extra` blocks a row verifies besides `chosen`, in this order: the block the lookup
    rule did not pick (the drafter's `own` where the lookup continuation `cont` was taken, else
    `cont` where it has 2+ tokens), then `swapped`: `own` with drafts swapped for the drafter's
    next guesses (`first_swaps`, or branch_plan.py's planned swaps); a datastore draft `stored`
    of 2+ tokens (datastore.py) takes the last place. Repeats are skipped; -1 pads."""
    width, cands = len(own), []
    if chosen != own:
        cands.append(own)
    elif len(cont) >= 2:
        cands.append(cont + [-1] * (width - len(cont)))
    cands += swapped
    last = stored + [-1] * (width - len(stored)) if stored and len(stored) >= 2 else None
    if last == chosen:
        last = None
    out: list[list[int]] = []
    for cand in cands:
        if len(out) == extra - (last is not None):
            break
        if cand != chosen and cand != last and cand not in out:
            out.append(cand)
    return out + [last] if last is not None and extra > 0 else out


def first_swaps(own: list[int], firsts: list[int]) -> list[list[int]]:
    """`own` with its first draft swapped for each of the drafter's next most likely first
    tokens `firsts`; none where a confidence cut left no draft."""
    return [[t] + own[1:] for t in firsts] if own and own[0] >= 0 else []


def planned_swaps(own: list[list[int]], probs: torch.Tensor, guesses: torch.Tensor,
                  guess_probs: torch.Tensor, extra: int,
                  wanted: list[bool]) -> list[list[list[int]]]:
    """Per row, up to `extra` blocks: `own` with the swaps branch_plan.py's best-first tree
    picks from the drafter's probability of each draft `probs` [b, w] and its next guesses
    `guesses` [b, w, k] (probabilities `guess_probs`), over the drafts the row verifies; none
    for a row not `wanted` (sampled, or not speculating)."""
    # the drafts are synced already: one more copy for the probabilities, one for the tokens
    pq, g = torch.cat([probs.unsqueeze(-1), guess_probs], dim=-1).tolist(), guesses.tolist()
    out: list[list[list[int]]] = []
    for r, row in enumerate(own):
        if not wanted[r]:
            out.append([])
            continue
        w = sum(1 for t in row if t >= 0)
        alts = [list(zip(g[r][d], pq[r][d][1:], strict=True)) for d in range(w)]
        out.append([apply_swaps(row, sw) for _, sw in plan_swaps([x[0] for x in pq[r][:w]],
                                                                  alts, extra)])
    return out


def _lookup(conts: list[tuple[list[int], int] | None], expected: list[float],
            lead: list[list[int]], drafts_host: list[list[int]], below: float) -> bool:
    """Swap in prompt-lookup drafts (in place) for speculating rows whose last tokens occurred
    earlier, where the drafter expects fewer than `below` accepted drafts, or where the
    continuation starts with the drafter's own first LOOKUP_AGREE drafts (`lead`, before
    confidence truncation) and runs longer than the drafts it would verify; True if any did."""
    width, swapped = len(drafts_host[0]) if drafts_host else 0, False
    for r, found in enumerate(conts):
        if found is None:  # not speculating
            continue
        cont, match = found
        verified = sum(1 for t in drafts_host[r] if t >= 0)
        if takes_lookup(cont, lead[r], verified, expected[r], below, match):
            drafts_host[r] = cont + [-1] * (width - len(cont))
            swapped = True
    return swapped


def takes_lookup(cont: list[int], lead: list[int], verified: int, expected: float,
                 below: float, match: int = 0) -> bool:
    """The lookup continuation `cont` replaces the drafter's block when the drafter expects
    fewer than `below` accepted drafts, when `cont` starts with the drafter's own first
    LOOKUP_AGREE drafts (`lead`) and is longer than the `verified` drafts it would verify, or
    when its source matches the last `match` >= LOOKUP_MATCH tokens and it is longer than the
    drafter's expected accepted drafts plus one."""
    if len(cont) < 2:  # a single copied token is not worth a swap
        return False
    agrees = cont[:LOOKUP_AGREE] == lead[:LOOKUP_AGREE] and len(cont) > verified
    copying = match >= LOOKUP_MATCH and len(cont) > expected + 1
    return expected < below or agrees or copying
