#!/usr/bin/env bash
# Multi-branch verify on the H200 (`--spec-branches N`, engine/local/branch.py), after
# `bash scripts/gpu/sglang.sh unpack` (the drafter at /tmp/sgcarry/drafter, the model prepared).
# The prompts and answers are the committed H200 answers to the independent set under the tool
# grammar (docs/gpu-runs/2026-12-04-copy-rule/evalset-samples.jsonl.gz), so no datagen is needed.
#   bash scripts/gpu/branches.sh tau     # offline τ: rule and N = 2..5 branches, every voice and
#                                        # generic turn (scripts/analysis/lookup_oracle.py)
#   bash scripts/gpu/branches.sh spec    # decode tok/s, one stream: bench spec --branches 1,2,3,5
#   bash scripts/gpu/branches.sh batch   # tok/s under a batch of 32 (datagen over the set)
# Each writes to $OUT (the device tool brings it back).
set -euo pipefail
source scripts/gpu/sglang_env.sh
D=/tmp/sgcarry/drafter
EV=runs/evalset
mkdir -p "$EV" "$OUT"
[ -s "$EV/samples.jsonl" ] || zcat docs/gpu-runs/2026-12-04-copy-rule/evalset-samples.jsonl.gz > "$EV/samples.jsonl"
case "${1:-}" in
tau)
  for src in independent-voice:346 independent-generic:119; do
    python3 scripts/analysis/lookup_oracle.py "$EV/samples.jsonl" --source "${src%%:*}" \
      --n "${src##*:}" --branches 2,3,4,5 --drafter "$D" --device cuda \
      --json "$OUT/branches-${src%%:*}.json" 2>&1 | grep -v '^Loading'
  done
  ;;
spec)
  ts bench spec --data "$EV" --device cuda --speculator "$D" --blocks 16 --policies always \
    --lookups on --branches "${BRANCHES:-1,2,3,5}" --n "${N:-24}" --no-transformers \
    --json "$OUT/spec-branches.json" 2>&1 | grep -v '^Loading'
  ;;
batch)   # alternating, so drift hits every setting alike; wall time from datagen's own log
  for rep in 1 2; do
    for cfg in "off 1" "on 1" "on 3"; do
      set -- $cfg
      rm -rf /tmp/dg && t0=$EPOCHREALTIME
      ts speculator datagen --eval-set --tool-grammar --device cuda --speculator "$D" \
        --spec-policy always --spec-lookup "$1" --spec-branches "$2" --max-batch 32 \
        --max-new-tokens 160 --out /tmp/dg > "$OUT/batch-$1-$2-$rep.log" 2>&1 || true
      awk -v a="$t0" -v b="$EPOCHREALTIME" -v c="lookup=$1 branches=$2 rep=$rep" \
        'BEGIN {printf "%s: process wall %.1f s\n", c, b - a}'
      grep -E "tokens_per_s|rror" "$OUT/batch-$1-$2-$rep.log" | tail -n 2 || true
    done
  done
  ;;
*)
  echo "usage: bash scripts/gpu/branches.sh tau|spec|batch" >&2; exit 2
  ;;
esac
