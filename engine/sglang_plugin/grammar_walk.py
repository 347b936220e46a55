"""The grammar's walk over a verify block or tree, on the host, in a batch with a grammar (tool
calls): for each node whose token the grammar allows after its path, the grammar's mask of the
next token. SGLang's `spec_utils.traverse_tree` does it by indexing the tree's CPU tensors one
element at a time (each a 0-d tensor, and the bit test four tensor ops): ~390 us a 16-node row
on the dev CPU against ~60 us here (`turnspec bench grammar-walk`), and every greedy row under a
grammar walks its block each step, on the host, beside the target's verify. `walk` is the same
walk over Python ints (AROUND hook on `traverse_tree`, hooks.py): the same grammar calls in the
same order, the same mask rows written, no other row touched.

The order (a depth-first walk, a node before its siblings): a node is taken when it is the
anchor (node 0, committed last step) or its token is below `vocab_size` and set in its parent's
mask row; a taken node's token is accepted, its own mask row filled unless the grammar has
terminated, its children walked, and the token rolled back; then its next sibling.
"""

from __future__ import annotations

from typing import Any

import torch


def around_traverse_tree(original, retrieve_next_token, retrieve_next_sibling, draft_tokens,
                         grammar, allocate_token_bitmask, vocab_size=None):
    """`walk` where the mask is the packed int32 bitmask on the host that xgrammar and
    llguidance allocate (the layout SGLang's walk reads too), else SGLang's own walk."""
    mask = allocate_token_bitmask
    if mask.device.type != "cpu" or mask.dtype != torch.int32 or mask.dim() != 2:
        return original(retrieve_next_token, retrieve_next_sibling, draft_tokens, grammar,
                        mask, vocab_size)
    return walk(retrieve_next_token.tolist(), retrieve_next_sibling.tolist(),
                draft_tokens.tolist(), grammar, mask, vocab_size)


def walk(first_child: list[int], next_sibling: list[int], tokens: list[int], grammar: Any,
         mask: torch.Tensor, vocab_size: int | None = None) -> None:
    """The walk (module doc) over one row's nodes: `first_child` / `next_sibling` [n] (-1: none),
    `tokens` [n], `mask` [n, words] int32 on the host (rows written in place by `grammar`'s
    fill_vocab_mask); `grammar` ends in the state it started in."""
    words = mask.numpy()  # a view: reads what the grammar's fill writes

    def allowed(parent: int, token: int) -> bool:
        if vocab_size and token >= vocab_size:
            return False
        return (int(words[parent, token // 32]) >> (token % 32)) & 1 == 1

    def visit(node: int, parent: int) -> None:
        while node != -1:
            token = tokens[node]
            if node == 0 or allowed(parent, token):
                if node != 0:
                    grammar.accept_token(token)
                if not grammar.is_terminated():
                    grammar.fill_vocab_mask(mask, node)
                    if first_child[node] != -1:
                        visit(first_child[node], node)
                if node != 0:
                    grammar.rollback(1)
            node = next_sibling[node]

    visit(0, -1)
