#!/usr/bin/env bash
# Cut the SmolLM2 GGUF (or the files given) into .gpu-carry/g1, g2, ... pieces that fit a device
# call beside the tree that travels with it: a call sends the tree plus its carry, 64 MiB at
# most. Run from the repo root after ../shared/scripts/split-model-for-gpu.sh (it leaves
# .gpu-carry/part1, part2 and wheels/); scripts/gpu/bulk.sh pack calls it with its tar.
# Prints the piece size and the calls: g1 rides with wheels/ (call A), each other piece alone.
set -euo pipefail
limit=67108864                                     # 64 MiB per call
margin=${MARGIN:-3000000}   # headroom for what the tree gains before the calls (diaries, JSON)
# what a call sends besides its carry: tracked and untracked-not-ignored files (tracked files
# that bulk.sh took out are listed too: stat skips them, and its status with them)
tree=$(git ls-files -z --cached --others --exclude-standard | { xargs -0 stat -c %s 2>/dev/null || true; } |
       awk '{s += $1} END {print s + 0}')
wheels=$(du -cb .gpu-carry/wheels | tail -n 1 | cut -f1)
piece=$(( limit - tree - wheels - margin ))
[ "$piece" -gt 4000000 ] || { echo "tree is $tree bytes: no room for pieces" >&2; exit 1; }
if [ "$#" -gt 0 ]; then src=("$@"); else src=(.gpu-carry/part1/part_aa .gpu-carry/part2/part_ab); fi
for f in "${src[@]}"; do [ -f "$f" ] || { echo "$f missing: run split-model-for-gpu.sh first" >&2; exit 1; }; done
rm -rf .gpu-carry/g[0-9]* .gpu-carry/x_*
cat "${src[@]}" | split -b "$piece" -d -a 1 - .gpu-carry/x_
i=1; for f in .gpu-carry/x_*; do mkdir -p .gpu-carry/g$i && mv "$f" .gpu-carry/g$i/; i=$((i + 1)); done
[ "$i" -le 10 ] || { echo "more than 9 pieces: stage_c.sh's glob orders g10 before g2" >&2; exit 1; }
echo "tree $tree bytes, pieces of $piece bytes: $((i - 1)) calls" \
     "(A carries g1 + wheels; then one call per piece, stage_c.sh with the last)"
cat .gpu-carry/g*/x_* | sha256sum | cut -c1-16    # the GGUF alone: b179c9523d0e6a0f
