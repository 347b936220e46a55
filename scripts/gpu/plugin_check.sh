#!/usr/bin/env bash
# Issue 53's batch check on the device, after `bash scripts/gpu/sglang.sh unpack`: each of
# plugin_check.py's modes in its own process, STAGGER s apart (SGLang sizes its KV cache from the
# memory free while it loads, so engines starting at once starve each other), then `compare`
# (τ, same as no speculation) and near_ties.py (where answers part: bf16 near-ties?).
#   MODES="none stock device trees" MEM=0.15 N=48 bash scripts/gpu/plugin_check.sh
# DTYPE=float16 (into runs/pc-float16): fewer near-ties than bf16; `compare` names every turn a
# mode answers otherwise than `none` (near_ties.py runs here for bf16 only; judge a float16 run
# with `near_ties.py runs/pc-float16 --dtype float32`, the CPU will do). No float32: SGLang
# 0.5.17's CUDA RMSNorm takes half types only.
# Everything under runs/pc (or pc-float16), copied to $OUT/ the same; a failed mode shows its error.
set -uo pipefail
source scripts/gpu/sglang_env.sh
DTYPE=${DTYPE:-bfloat16}; R=runs/pc; [ "$DTYPE" = bfloat16 ] || R=runs/pc-$DTYPE
MODES=${MODES:-none stock device trees}; P=$(basename $R); mkdir -p $R "${OUT:?}/$P"
pids=()
for m in $MODES; do
  python3 scripts/gpu/plugin_check.py run "$m" "$R/$m.json" --n "${N:-48}" --mem "${MEM:-0.15}" \
    --dtype "$DTYPE" > "$R/$m.log" 2>&1 &
  pids+=($!); sleep "${STAGGER:-12}"
done
wait "${pids[@]}"   # these processes only (`pgrep -f` would also find this shell)
for m in $MODES; do
  [ -f "$R/$m.json" ] || { echo "== $m failed"; grep -E "Error|Traceback" -A4 "$R/$m.log" | tail -12; }
done
python3 scripts/gpu/plugin_check.py compare $R | tee $R/compare.txt
if [ "$DTYPE" = bfloat16 ]; then
  timeout 150 python3 scripts/gpu/near_ties.py $R --json $R/near-ties.json > $R/near-ties.txt 2>&1
  grep -vE "^\s+independent" $R/near-ties.txt | tail -6
fi
cp $R/*.json $R/*.txt "$OUT/$P/" 2>/dev/null; true
