"""The speculation core: what a speculative step verifies, for every engine and the τ replay.

Read in this order:

    proposers/  candidate blocks for a row: the DFlash drafter's block with its probabilities
                and next guesses (drafter.py), prompt lookup (lookup.py), the datastore of the
                target's earlier answers (datastore.py) and the one that learns from the
                server's own answers (learning.py)
    swaps.py    which of the drafter's drafts its extra branches swap (a best-first tree)
    planner.py  per row, the block it verifies and its extra branches, under the step's budget
                of verify rows (options.py holds the settings and the budget rule)
    width.py    the budget by measured cost: as many blocks a row as commit more tokens a
                second on this device at this batch (a verify-cost curve against a τ curve)
    accept.py   which verified block each row commits: the one accepted furthest

Verify and commit belong to the engine: the embedded engine verifies extra blocks as shadow
rows of its target pass (engine/local/spec_step.py). The offline τ replay
(speculator/tau.py) calls the same proposers and planner, so its τ is the served τ.

Nothing here imports an engine: torch and numpy only, so any engine can call it.
"""
