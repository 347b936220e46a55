#!/usr/bin/env bash
# Cut the SmolLM2 GGUF into .gpu-carry/g1, g2, ... pieces that fit a device call beside the
# tracked tree: a call sends the tree plus its carry, 64 MiB at most, and the tree grows with
# the committed completions (models/data/, ~3 MB a session). Run from the repo root after
# ../shared/scripts/split-model-for-gpu.sh (it leaves .gpu-carry/part1, part2 and wheels/).
# Prints the piece size and the calls: g1 rides with wheels/ (call A), each other piece alone.
set -euo pipefail
limit=67108864                                     # 64 MiB per call
margin=${MARGIN:-1000000}                          # headroom for files written before the call
tree=$(git ls-files -z | xargs -0 du -cb | tail -n 1 | cut -f1)
wheels=$(du -cb .gpu-carry/wheels | tail -n 1 | cut -f1)
piece=$(( limit - tree - wheels - margin ))
[ "$piece" -gt 4000000 ] || { echo "tree is $tree bytes: no room for GGUF pieces" >&2; exit 1; }
src=(.gpu-carry/part1/part_aa .gpu-carry/part2/part_ab)
[ -f "${src[0]}" ] && [ -f "${src[1]}" ] || { echo "run split-model-for-gpu.sh first" >&2; exit 1; }
rm -rf .gpu-carry/g[0-9]* .gpu-carry/x_*
cat "${src[@]}" | split -b "$piece" -d -a 1 - .gpu-carry/x_
i=1; for f in .gpu-carry/x_*; do mkdir -p .gpu-carry/g$i && mv "$f" .gpu-carry/g$i/; i=$((i + 1)); done
echo "tree $tree bytes, pieces of $piece bytes: $(ls -d .gpu-carry/g[0-9]* | wc -l) calls" \
     "(A carries g1 + wheels; then one call per piece, stage_c.sh with the last)"
cat .gpu-carry/g*/x_* | sha256sum | cut -c1-16                 # b179c9523d0e6a0f
