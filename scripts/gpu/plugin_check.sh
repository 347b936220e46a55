#!/usr/bin/env bash
# Issue 53's batch check on the device, after `bash scripts/gpu/sglang.sh unpack`: each of
# plugin_check.py's modes in its own process, STAGGER s apart (SGLang sizes its KV cache from the
# memory free while it loads, so engines starting at once starve each other), then `compare`
# (τ, same as no speculation) and near_ties.py (where answers part: bf16 near-ties?).
#   MODES="none stock device trees" MEM=0.15 N=48 bash scripts/gpu/plugin_check.sh
# Everything under runs/pc, copied to $OUT/pc; a mode that fails shows its log's error.
set -uo pipefail
source scripts/gpu/sglang_env.sh
R=runs/pc; MODES=${MODES:-none stock device trees}; mkdir -p $R "${OUT:?}/pc"
pids=()
for m in $MODES; do
  python3 scripts/gpu/plugin_check.py run "$m" "$R/$m.json" --n "${N:-48}" --mem "${MEM:-0.15}" \
    > "$R/$m.log" 2>&1 &
  pids+=($!); sleep "${STAGGER:-12}"
done
wait "${pids[@]}"   # these processes only (`pgrep -f` would also find this shell)
for m in $MODES; do
  [ -f "$R/$m.json" ] || { echo "== $m failed"; grep -E "Error|Traceback" -A4 "$R/$m.log" | tail -12; }
done
python3 scripts/gpu/plugin_check.py compare $R | tee $R/compare.txt
timeout 150 python3 scripts/gpu/near_ties.py $R --json $R/near-ties.json > $R/near-ties.txt 2>&1
grep -vE "^\s+independent" $R/near-ties.txt | tail -6
cp $R/*.json $R/*.txt "$OUT/pc/" 2>/dev/null; true
