#!/usr/bin/env bash
# Issue 32 item 3 on the lent H200: SGLang step times for a Qwen3-8B-shaped target and a 5-layer
# DFlash drafter of the matching shape, both with random weights (`load_format="dummy"`: nothing
# is downloaded). One call: the copy bandwidth, then no speculation and DFlash at B = 16, 8, 4
# (one SGLang engine each, ~1.5 min apiece); each result is copied to $OUT as soon as it exists,
# so a call cut short by the 10-minute limit keeps what finished (rerun with BLOCKS="4").
#   bash scripts/gpu/sizing.sh
# then, here: turnspec simulate --measured docs/gpu-runs/<date>-sizing/sizing.json
# Issue 53's verify-cost table by width (B the tokens a row verifies), and the plugin's trees
# where they plan (B <= 32); a block's engine takes minutes, so a few blocks a call:
#   BLOCKS="0 16 32" bash scripts/gpu/sizing.sh, then BLOCKS="64 128", then MEM=0.7 BLOCKS="256"
# (MEM: SGLang's mem_fraction_static, default 0.85; the graphs of 256 nodes at 32 streams did not
# fit beside a pool of 0.85 on an 80 GB H100)
#   PLUGIN=trees BLOCKS="16 32" bash scripts/gpu/sizing.sh   # into runs/sizing-trees
# then, here: python scripts/analysis/width_projection.py --measured .../sizing.json
set -uo pipefail
source scripts/gpu/sglang_env.sh
PLUGIN=${PLUGIN:-off}; R=runs/sizing; [ "$PLUGIN" = off ] || R=runs/sizing-$PLUGIN; mkdir -p $R
size() { python3 -m turnspec.benchmarks.sizing --out $R --mem-fraction "${MEM:-0.85}" "$@" 2>&1 | grep -v "^\[" | tail -n 20
         cp $R/sizing*.json "$OUT"/ 2>/dev/null; }
[ -f $R/sizing-meta.json ] || size --bandwidth
for b in ${BLOCKS:-0 16 8 4}; do
  echo "== block $b after ${SECONDS}s"
  if [ "$b" = 0 ]; then size --block 0; else size --block "$b" --plugin "$PLUGIN"; fi
done
size --merge; ls -la "$OUT"
