"""Step B of turnspec's speculator inside SGLang (`TURNSPEC_SGLANG_SPEC=trees`): each greedy row
verifies a token tree of N nodes in DFLASH's own verify of N tokens (N = the block size), so the
verify keeps its shapes and its CUDA graphs, captured with a tree mask (`around_mask_policy`, below).

A step, all on the device (the host never waits):
1. `plan` (before the verify is loaded): the lookup continuation and the planner's verdict per
   row (kernels/plan_lookup.py `choose`: a row whose rule takes the continuation verifies it
   as a chain, step A's swap), then each other greedy row's tree, the N - 1 most likely nodes
   of its candidate family: the drafter's block, its swaps and the continuation the rule passed
   over (kernels/tree_plan.py; the host's form is engine/spec/tree.py `best_first(family(...))`).
   The nodes' tokens overwrite the row's block (node 0, the anchor, stays).
2. `attach` (SGLang's verify input, before it is loaded): the tree's mask (each node sees the
   committed prefix, its ancestors and itself; kernels/tree_mask.py, SGLang's layout) and each
   node's position (prefix + depth).
3. `settle` (right after the target's verify pass, before DFLASH's accept): the target's choice
   after each node, the accepted path (kernels/tree_accept.py), and the verify put in path
   order (kernels/tree_accept.py `linearized`): logits and hidden states permuted, the block
   rewritten so that DFLASH's linear accept takes exactly the path and the target's bonus
   after it, and the path's KV moved into the slots of positions prefix + 0.. (SGLang's
   `move_kv_cache`). DFLASH then commits, and writes the drafter's context from the permuted
   hidden states at the right positions, as for a chain.

Rows that do not branch (sampled, penalised, or taking the lookup) verify a chain (the
drafter's block, or the lookup's where step A swaps it): the mask is causal for them and
`settle` leaves them as they are. Lossless: every committed token is the target's choice after
a path it saw with exactly that path's attention.

Rows under a grammar (tool calls) branch too. In a batch with a grammar DFLASH walks the
grammar along the verified tokens on the host and masks the target's logits with it: SGLang's
walk over a tree (`traverse_tree`, its EAGLE and NGRAM trees' own) is handed the trees'
links (kernels/tree_links.py), so every node's logits are masked by the grammar after its own path,
and `settle` waits until that mask is applied (`after_grammar_mask`): the accepted path is the masked
target's, and each committed token obeys the grammar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from turnspec.engine.sglang_plugin.datastore import aligned
from turnspec.engine.sglang_plugin.lookup_swap import row_flags
from turnspec.engine.sglang_plugin.state import STATE, StepContext, arg, sync_free
from turnspec.engine.spec.planner import LOOKUP_AGREE, LOOKUP_MATCH
from turnspec.kernels.plan_lookup import choose
from turnspec.kernels.tree_accept import tree_settle
from turnspec.kernels.tree_links import tree_links
from turnspec.kernels.tree_mask import tree_mask_of_parents
from turnspec.kernels.tree_plan import tree_plan

# the probability a tree gives a lookup token the drafter does not rank, on a row whose rule
# passed the continuation over (a row whose rule takes it verifies it as a chain: on the
# independent voice turns, trees there lost to the whole copied block, scripts/analysis/
# branch_lab.py --nodes)
UNRANKED_PASS = 0.5
# the drafter's next guesses a position a tree may swap in (offline, 16 nodes, two -> three:
# generic τ 2.86 -> 2.93, voice 6.30 -> 6.33; docs/dflash.md §7)
GUESSES = 3
# the largest DFLASH block trees plan over: a row's candidates include every single swap,
# GUESSES * W * (W + 1) / 2 of them (W = N - 1), one lane each in the plan's one program a row
MAX_NODES = 32


@dataclass(slots=True)
class Tree:
    """A step's trees: tokens [b, N] (the verify's block buffer), parents and depths [b, N],
    which rows branch [b] bool, and the drafter's own drafts [b, N-1] (None for chains)."""
    tokens: torch.Tensor
    parents: torch.Tensor
    depths: torch.Tensor
    branching: torch.Tensor
    drafted: torch.Tensor | None = None
    attached: bool = False
    settled: bool = False
    grammar: bool = False  # the batch's grammar walk follows the trees: settle after its mask
    pending: tuple | None = None  # settle's arguments while it waits for that mask


def chain(blocks: torch.Tensor) -> Tree:
    """The drafter's blocks as chains (no branching row): a verify with a causal mask."""
    bs, n = blocks.shape
    nodes = torch.arange(n, device=blocks.device).expand(bs, n)
    return Tree(blocks, nodes - 1, nodes, torch.zeros(bs, dtype=torch.bool, device=blocks.device))


@sync_free
def plan(step: StepContext, blocks: torch.Tensor, ok: list[bool], grammar: list[bool],
         top: tuple[torch.Tensor, torch.Tensor]) -> None:
    """Step 1 (module doc) into `blocks` [b, N]; `ok`: rows the plan may change (a row under a
    grammar only where the grammar's walk is still to be built, from these trees), `grammar`:
    rows under a grammar; `top`: the drafter's top tokens and log-probabilities [b, N-1, K]."""
    bs, width = blocks.shape[0], blocks.shape[1] - 1
    dev = blocks.device
    drafted = blocks[:, 1:].clone()
    flags = row_flags(ok, grammar, dev)
    planned = STATE.history is not None and any(ok)
    if planned:  # choose writes every cell of both: a row branches if it may be planned, unless
        # it takes the lookup (then it verifies that as a chain, step A)
        cont = torch.empty((bs, width), dtype=torch.int64, device=dev)
        branching = torch.empty(bs, dtype=torch.bool, device=dev)
        choose(STATE.history.tokens, STATE.history.lengths, step.batch.req_pool_indices, blocks,
               top[1][..., 0].reshape(-1).float(), flags, STATE.device_counts(dev)[:3],
               below=STATE.options.lookup_below, agree=LOOKUP_AGREE, match_min=LOOKUP_MATCH,
               tree=(cont, branching))
    else:  # no row may plan (or no kept tokens yet): chains of the drafter's blocks
        cont = torch.full((bs, width), -1, dtype=torch.int64, device=dev)
        branching = flags[:, 0] != 0
    if STATE.store is not None and planned:  # datastore.py
        drafts, known, rows_drafted = STATE.store.drafts(step.batch.reqs, ok, width, width + 1,
                                                          dev)
        STATE.stats["store_drafts"] += rows_drafted
        theirs = aligned(STATE.history.tokens, STATE.history.lengths,
                         step.batch.req_pool_indices, drafts, known, width)
        cont.copy_(torch.where((cont < 0).all(1, keepdim=True), theirs, cont))
    tokens, parents, depths = tree_plan(blocks, top[0][..., 1:], top[1], cont,
                                        unranked_of(bs, dev), branching)
    blocks.copy_(tokens)
    step.tree = Tree(blocks, parents, depths, branching, drafted)
    STATE.stats["tree_rows"] += sum(ok)


@lru_cache(maxsize=256)
def unranked_of(bs: int, device: torch.device) -> torch.Tensor:
    """[bs] log(UNRANKED_PASS) on `device`, made once a batch size (read, never written)."""
    return torch.full((bs,), math.log(UNRANKED_PASS), device=device)


@sync_free
def attach(tree: Tree, verify: Any, batch: Any, attn_backend: Any) -> None:
    """Step 2: the mask and the positions on SGLang's verify input `verify` (DFlashVerifyInput).
    The mask is written straight into the attention backend's verify-mask buffer, the one its
    CUDA graphs read (sized for the largest captured batch at the longest context; SGLang then
    copies it onto itself), else, for a batch too large for the graphs, into a buffer of its
    own size (a host sync, on a step that runs eagerly anyway)."""
    bs, n = tree.tokens.shape
    buffer = getattr(attn_backend, "verify_mask", None)
    fits = buffer is not None and buffer.fits(bs) and full_layout(buffer)
    verify.custom_mask = tree_mask_of_parents(tree.parents, batch.seq_lens.to(torch.int64),
                                              buffer.buffer if fits else None)
    first = verify.positions.view(bs, n)[:, :1]
    verify.positions = (first + tree.depths.to(first.dtype)).reshape(-1)
    tree.attached = True


def verify_backend(model_runner: Any) -> Any:
    """The attention backend the target's verify runs on: its CUDA graphs' where they are
    captured (they must read a FULL_MASK uint8 buffer, else a tree would verify under a causal
    mask: refused on the first verify, the backends being built after the DFLASH worker),
    else the model runner's."""
    runner = getattr(model_runner, "decode_cuda_graph_runner", None)
    backend = getattr(runner, "attn_backend", None) or model_runner.attn_backend
    if runner is not None and not STATE.mask_checked:
        buffer = getattr(backend, "verify_mask", None)
        if buffer is None or not full_layout(buffer):
            got = "none" if buffer is None else f"{buffer.mode} {buffer.buffer.dtype}"
            raise RuntimeError(f"turnspec sglang plugin: the target's verify CUDA graphs read the "
                               f"mask buffer {got}; expected FULL_MASK uint8 (the triton "
                               "backend's), or TURNSPEC_SGLANG_SPEC=lookup")
        STATE.mask_checked = True
    return backend


def full_layout(buffer: Any) -> bool:
    """The backend's verify-mask buffer holds every row's [N, prefix + N] mask, in uint8 (the
    layout kernels/tree_mask.py writes)."""
    return getattr(buffer.mode, "name", "") == "FULL_MASK" and buffer.buffer.dtype == torch.uint8


@sync_free
def settle(tree: Tree, logits_output: Any, out_cache_loc: torch.Tensor, kv_pool: Any) -> None:
    """Step 3: the verify's outputs and the path's KV in path order, the block rewritten
    (kernels/tree_accept.py `tree_settle`, one launch besides the gathers)."""
    bs, n = tree.tokens.shape
    logits = logits_output.next_token_logits[: bs * n]
    target = logits.argmax(dim=-1).view(bs, n)
    drafted = tree.drafted if tree.drafted is not None else tree.tokens[:, 1:]
    counts = STATE.device_counts(target.device)[3:]
    flat = tree_settle(tree.tokens, tree.parents, target, drafted, tree.branching, counts,
                       logits.shape[-1])
    logits_output.next_token_logits = in_order(logits_output.next_token_logits, flat)
    if logits_output.hidden_states is not None:
        logits_output.hidden_states = in_order(logits_output.hidden_states, flat)
    loc = out_cache_loc[: bs * n]
    kv_pool.move_kv_cache(loc, loc.index_select(0, flat))
    tree.settled = True


def in_order(rows: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
    """`rows`' first len(flat) rows in the order `flat` gives: a new tensor where they are all
    of it (one launch; DFLASH reads the output's attribute after the hooked call), else in
    place (a gather and a copy back)."""
    if rows.shape[0] == flat.shape[0]:
        return rows.index_select(0, flat)
    head = rows[: flat.shape[0]]
    head.copy_(head.index_select(0, flat))
    return rows


# the trees' own hooks (hooks.install registers them for mode "trees")

def around_target_forward(original, *args, **kwargs):
    """The target's pass; after a verify of trees, its outputs in the accepted path's order
    (trees.settle) before DFLASH reads them."""
    out = original(*args, **kwargs)
    step = STATE.step
    tree = step.tree if step is not None else None
    if kwargs.get("is_verify") and tree is not None and tree.attached and not tree.settled:
        worker = args[0]
        fb = arg(args, kwargs, 2, "forward_batch")
        work = (out.logits_output, fb.out_cache_loc, worker.model_runner.token_to_kv_pool)
        if tree.grammar:
            tree.pending = work  # after the grammar's mask (after_grammar_mask)
        else:
            settle(tree, *work)
    return out


def after_grammar_mask(result, *args, **kwargs):
    """DFLASH's grammar mask is on the verify's logits (in node order, as the walk followed the
    trees): now the trees' settle, so the accepted path is the masked target's."""
    step = STATE.step
    tree = step.tree if step is not None else None
    if tree is not None and tree.pending is not None and not tree.settled:
        settle(tree, *tree.pending)
        tree.pending = None
    return result


def around_mask_policy(original, attn_backend):
    """DFLASH's target verify reads a custom mask, under CUDA graphs too (registered for trees
    only); the plain step's graphs (one token a row, plain.py) keep SGLang's own policy."""
    name, custom = original(attn_backend)
    return name, custom or not STATE.building_plain


def refusals(server_args: Any) -> list[str]:
    """What in SGLang's server arguments trees cannot serve ([] when nothing)."""
    bad = []
    backend = getattr(server_args, "attention_backend", None)
    if backend != "triton":
        bad.append(f"attention_backend={backend!r} (verify trees write the triton backend's "
                   "mask layout; expected 'triton')")
    if (getattr(server_args, "page_size", 1) or 1) != 1:
        bad.append(f"page_size={server_args.page_size} (the accepted path's KV moves token by "
                   "token; expected 1)")
    return bad


def warm(nodes: int, device: torch.device | str, vocab: int) -> None:
    """Run a step's tree kernels once on a tiny batch, so that no request pays a compile: Triton
    compiles on first use, per specialisation of its integer arguments (`vocab`: the target's)."""
    blocks = torch.zeros((1, nodes), dtype=torch.int64, device=device)
    w = nodes - 1
    top = torch.zeros((1, w, 1 + GUESSES), dtype=torch.int64, device=device)
    lp = torch.full((1, w, 1 + GUESSES), -1.0, device=device)
    cont = torch.full((1, w), -1, dtype=torch.int64, device=device)
    ok = torch.ones(1, dtype=torch.bool, device=device)
    tokens, parents, _ = tree_plan(blocks, top[..., 1:], lp, cont, lp[:, 0, 0], ok)
    tree_mask_of_parents(parents, torch.ones(1, dtype=torch.int64, device=device))
    tree_links(parents)  # a batch under a grammar walks the trees by these
    tree_settle(tokens, parents, tokens, blocks[:, 1:], ok, torch.zeros(1, dtype=torch.int64,
                                                                    device=device), vocab)


def after_alloc_memory_pool(result, *args, **kwargs):
    """Once the scheduler has allocated the KV pools (after the DFLASH worker's start, which has
    none yet): SGLang's KV move (`settle`) compiles one variant per power of two of the slots it
    moves, up to its chunk; each size a batch of trees reaches moves the dummy slot 0 onto
    itself, so that no request pays a compile."""
    worker = args[0]
    try:
        kv_pool = worker.model_runner.token_to_kv_pool  # the target's
        chunk = int((getattr(kv_pool, "_kv_copy_config", None) or {}).get("num_locs_upper", 256))
        size = int(worker.block_size)
        while True:
            slot0 = torch.zeros(min(size, chunk), dtype=torch.int64, device=worker.device)
            kv_pool.move_kv_cache(slot0, slot0)
            if size >= chunk:
                break
            size *= 2
    except Exception as e:
        raise RuntimeError(f"turnspec sglang plugin: the trees' KV move failed at start on "
                           f"{worker.device}: {e}; expected SGLang's target KV pool to move "
                           "slot 0 onto itself (or TURNSPEC_SGLANG_SPEC=lookup)") from e
    return result
