#!/usr/bin/env bash
# The datastore that learns from served answers (`serve --spec-datastore-learn`), end to end on
# this machine: the same courier calls (a domain no training set has) through two servers, the
# same engine flags but for learning, one after the other; then `loadtest compare`.
#   bash scripts/loop/learn.sh [OUT_DIR]     # CALLS=120 REQ=400 C=8 BRANCHES=3 PLAN=planned
# Writes OUT_DIR/{courier.jsonl, off.json, on.json, off.txt, on.txt, compare.txt}; the server's
# τ a turn (tokens per verify step) is the loadtest's `tau` row.
set -euo pipefail
O=${1:-runs/learn}; mkdir -p "$O"
TS=(${TS:-.venv/bin/turnspec})
python3 scripts/loop/courier.py --calls "${CALLS:-120}" --seed "${SEED:-0}" --out "$O/courier.jsonl"
port=18030
for arm in off on; do
  port=$((port + 1))
  learn=(); [ $arm = on ] && learn=(--spec-datastore-learn)
  "${TS[@]}" serve --port $port --grpc-port -1 ${DEVICE:+--device $DEVICE} --speculator "${SPEC:-default}" \
    --spec-branches "${BRANCHES:-3}" --spec-branch-plan "${PLAN:-planned}" "${learn[@]}" \
    > "$O/serve-$arm.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
    kill -0 $pid 2>/dev/null || { tail -n 20 "$O/serve-$arm.log"; exit 1; }
    sleep 0.5
  done
  "${TS[@]}" loadtest --url ws://127.0.0.1:$port/v1/responses --workload "$O/courier.jsonl" \
    --concurrency "${C:-8}" --requests "${REQ:-400}" --no-progress --out "$O/$arm.json" \
    > "$O/$arm.txt" 2>&1 || true
  kill -TERM $pid; wait $pid || true
  echo "== learning $arm"; sed -n '2p;/^E2E /p;/^TPOT /p;/^tau /p' "$O/$arm.txt"
done
"${TS[@]}" loadtest compare "$O/off.json" "$O/on.json" | tee "$O/compare.txt"
