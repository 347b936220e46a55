"""Accept: which verified block each row commits.

Each block was verified on its own (the target's choice at every position from that block's
exact prefix), and a block's accepted drafts are its longest prefix the target agrees with
(kernels/dflash_accept.py). A row with several blocks commits the one accepted furthest: every
block's committed tokens are the target's own choices, so any of them is lossless for a greedy
row, and the longest saves the most steps. Ties go to the earlier block (the row's chosen one).
"""

from __future__ import annotations


def furthest(owner: list[int], accepted: list[int], rows: int) -> list[int]:
    """For each of `rows` rows, the index of the verified block it commits: of the blocks it
    owns (`owner[i]` = the row of block i; block r is row r's chosen one, for r < rows), the one
    with the most `accepted` drafts, the earliest on a tie."""
    if len(owner) != len(accepted) or owner[:rows] != list(range(rows)):
        raise ValueError(f"furthest: {len(owner)} owners and {len(accepted)} accepted counts for "
                         f"{rows} rows; expected one of each per block, rows' own blocks first")
    best = list(range(rows))
    for i in range(rows, len(owner)):
        r = owner[i]
        if accepted[i] > accepted[best[r]]:
            best[r] = i
    return best
