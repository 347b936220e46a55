"""The grammar's walk over a verify block or tree (host µs a row a step), the plugin's
(engine/sglang_plugin/grammar_walk.py) against SGLang's own `spec_utils.traverse_tree`:

    turnspec bench grammar-walk [--nodes 16] [--convs 20] [--sglang-source spec_utils.py]

Rows: the independent voice turns' answers (speculator/eval/voice.jsonl, their tool sets'
grammars through turnspec's compiler), a walk every 4 tokens from the answer's state there, over
a `chain` (the answer's next tokens, one refused at a random depth: a drafter's block) and a
`tree` (random parents, mostly the answer's tokens at each depth). SGLang's walk is imported
from an installed sglang, else compiled alone from `--sglang-source` (its spec_utils.py), else
left out. Both walk the same grammar object and write the same mask (checked on every row).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import statistics
import time
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any, Optional

import torch

from turnspec.benchmarks.host import cpu_name
from turnspec.engine.sglang_plugin.grammar_walk import around_traverse_tree
from turnspec.kernels.tree_links import tree_links

VOICE = Path(__file__).resolve().parents[1] / "speculator" / "eval" / "voice.jsonl"


class Grammar:
    """The four calls a walk makes of SGLang's grammar object (xgrammar_backend's), over an
    xgrammar matcher."""

    def __init__(self, matcher: Any) -> None:
        self.matcher = matcher

    def accept_token(self, token: int) -> None:
        if not self.matcher.accept_token(token):
            raise ValueError(f"the walk accepted token {token}, which the grammar refuses")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def fill_vocab_mask(self, mask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(mask, idx)


def random_tree(rng: random.Random, answer: list[int], at: int, n: int,
                vocab: int) -> tuple[list[int], list[int]]:
    """Parents (-1 the anchor's, else an earlier node) and tokens of an n-node tree over the
    answer cut at `at`: mostly the answer's token at the node's depth, else a random one, now
    and then one past the vocabulary."""
    parents, depth, tokens = [-1], [0], [answer[at - 1] if at else 0]
    for node in range(1, n):
        parent = rng.randrange(node) if rng.random() < 0.5 else node - 1
        parents.append(parent)
        depth.append(depth[parent] + 1)
        roll, truth = rng.random(), at + depth[node] - 1
        if roll < 0.7 and truth < len(answer):
            tokens.append(answer[truth])
        elif roll < 0.97:
            tokens.append(rng.randrange(vocab))
        else:
            tokens.append(vocab + rng.randrange(8))
    return parents, tokens


def chain(rng: random.Random, answer: list[int], at: int, n: int,
          vocab: int) -> tuple[list[int], list[int]]:
    """A drafter's block: the answer's next tokens, one replaced at a random depth."""
    tokens = [answer[at - 1] if at else 0] + [answer[min(at + i, len(answer) - 1)]
                                              for i in range(n - 1)]
    if n > 1:
        tokens[rng.randrange(1, n)] = rng.randrange(vocab)
    return list(range(-1, n - 1)), tokens


def sglang_walk(source: str | None):
    """SGLang's `traverse_tree`: imported, else compiled alone from its source file, else None."""
    try:
        from sglang.srt.speculative.spec_utils import traverse_tree
        return traverse_tree, "sglang (installed)"
    except ImportError:
        pass
    if source is None:
        return None, "not measured (no sglang; --sglang-source names its spec_utils.py)"
    tree = ast.parse(Path(source).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "traverse_tree")
    space: dict[str, Any] = {"torch": torch, "Optional": Optional, "BaseGrammarObject": object}
    exec(compile(ast.Module([fn], []), source, "exec"), space)  # noqa: S102 (its own source)
    return space["traverse_tree"], f"sglang source {source}"


def answers(chat: Any, convs: int):
    """(compiled tool grammar, answer ids ending in the stop token) for each assistant answer
    of the first `convs` independent voice conversations, rendered as the model writes it."""
    from turnspec.tools_grammar.schema import parse_tool_choice, parse_tools

    for line in VOICE.read_text().splitlines()[:convs]:
        conv = json.loads(line)
        tools = parse_tools(conv["tools"])
        compiled = chat.grammar_compiler.prepare(tools, parse_tool_choice(None, tools),
                                                 chat.tool_format).compiled
        for msg in conv["messages"]:
            if msg["role"] == "assistant":
                text = chat.tool_format.to_template_messages(
                    [{"role": "user", "content": "hi"}, msg], tools)[-1]["content"]
                yield compiled, chat.encode(text) + [chat.stop_token_ids[0]]


def cases(model: str | None, convs: int, nodes: int, seed: int):
    """(shape, compiled grammar, state prefix, vocab, parents, tokens) rows: a walk every 4
    tokens of each answer, over a chain and a tree."""
    import xgrammar  # noqa: F401 (the grammar backend)

    from turnspec.engine.chat import ChatTemplate
    from turnspec.engine.local.args import resolve_model_dir

    chat = ChatTemplate.from_model_dir(resolve_model_dir(model))
    rng = random.Random(seed)
    for compiled, answer in answers(chat, convs):
        for at in range(0, len(answer) - 1, 4):
            for shape, make in (("chain", chain), ("tree", random_tree)):
                yield (shape, compiled, answer[:at], chat.vocab_size,
                       *make(rng, answer, at, nodes, chat.vocab_size))


def time_walk(fn, links: tuple, tokens: list[int], grammar: Grammar, mask: torch.Tensor,
              vocab: int) -> float:
    """µs of one walk through `fn`'s own arguments (SGLang's: the tree's CPU tensors)."""
    drafts = torch.tensor(tokens)
    t0 = time.perf_counter_ns()
    fn(*links, drafts, grammar, mask, vocab_size=vocab)
    return (time.perf_counter_ns() - t0) / 1000


def measure(model: str | None, convs: int, nodes: int, seed: int, source: str | None) -> dict:
    import xgrammar as xgr

    theirs, peer = sglang_walk(source)
    out: dict[str, Any] = {"bench": "grammar-walk", "date": date.today().isoformat(),
                           "cpu": cpu_name(), "nodes": nodes, "convs": convs, "peer": peer}
    times: dict[str, dict[str, list[float]]] = {"chain": {}, "tree": {}}
    for shape, compiled, prefix, vocab, parents, tokens in cases(model, convs, nodes, seed):
        matcher = xgr.GrammarMatcher(compiled)
        for token in prefix:
            matcher.accept_token(token)
        links = tuple(t[0] for t in tree_links(torch.tensor([parents])))
        masks = {}
        ours = partial(around_traverse_tree, theirs)  # the hook as SGLang calls it
        for name, fn in (("plugin", ours), ("sglang", theirs)):
            if fn is None:
                continue
            mask = xgr.allocate_token_bitmask(nodes, vocab)
            us = time_walk(fn, links, tokens, Grammar(matcher), mask, vocab)
            times[shape].setdefault(name, []).append(us)
            masks[name] = mask
        if len(masks) == 2 and not torch.equal(masks["plugin"], masks["sglang"]):
            raise AssertionError(f"the walks' masks differ ({shape}, parents {parents})")
    for shape, by in times.items():
        out[shape] = {name: {"rows": len(v), "p50_us": round(statistics.median(v), 1),
                             "mean_us": round(statistics.fmean(v), 1)} for name, v in by.items()}
    return out


def table(r: dict) -> str:
    lines = [f"grammar walk over a verify row of {r['nodes']} nodes, {r['cpu']}, {r['date']}; "
             f"peer: {r['peer']}"]
    for shape in ("chain", "tree"):
        cells = "  ".join(f"{name} p50 {x['p50_us']} µs (mean {x['mean_us']}, {x['rows']} rows)"
                          for name, x in r[shape].items())
        lines.append(f"  {shape:<5}  {cells}")
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("grammar-walk", help="the grammar's walk over a verify row: the "
                              "plugin's against SGLang's")
    p.add_argument("--model", default=None, help="HF model folder (default: SmolLM2)")
    p.add_argument("--nodes", type=int, default=16, help="nodes a row (default 16)")
    p.add_argument("--convs", type=int, default=20, help="voice conversations (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sglang-source", default=None,
                   help="SGLang's speculative/spec_utils.py, where sglang is not installed")
    p.add_argument("--json", default=None, help="write the results here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.nodes < 1 or args.convs < 1:
        raise ValueError(f"--nodes {args.nodes} --convs {args.convs}: expected both >= 1")
    result = measure(args.model, args.convs, args.nodes, args.seed, args.sglang_source)
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0
