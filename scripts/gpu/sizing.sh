#!/usr/bin/env bash
# Issue 32 item 3 on the lent H200: SGLang step times for a Qwen3-8B-shaped target and a 5-layer
# DFlash drafter of the matching shape, both with random weights (`load_format="dummy"`: nothing
# is downloaded). One call: the copy bandwidth, then no speculation and DFlash at B = 16, 8, 4
# (one SGLang engine each, ~1.5 min apiece); each result is copied to $OUT as soon as it exists,
# so a call cut short by the 10-minute limit keeps what finished (rerun with BLOCKS="4").
#   bash scripts/gpu/sizing.sh
# then, here: turnspec simulate --measured docs/gpu-runs/<date>-sizing/sizing.json
set -uo pipefail
source scripts/gpu/sglang_env.sh
R=runs/sizing; mkdir -p $R
size() { python3 -m turnspec.benchmarks.sizing --out $R "$@" 2>&1 | grep -v "^\[" | tail -n 20
         cp $R/sizing*.json "$OUT"/ 2>/dev/null; }
[ -f $R/sizing-meta.json ] || size --bandwidth
for b in ${BLOCKS:-0 16 8 4}; do echo "== block $b after ${SECONDS}s"; size --block $b; done
size --merge; ls -la "$OUT"
