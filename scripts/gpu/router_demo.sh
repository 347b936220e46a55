#!/usr/bin/env bash
# Issue 32 item 5 on the lent H200: two SGLang workers sharing the one GPU (mem_fraction_static
# 0.35 each, SmolLM2 + our DFLASH drafter) behind sglang-router, conversations of 3 turns sent
# through the router under three policies: round_robin (no affinity), cache_aware (the router's
# prefix tree) and manual (x-smg-routing-key = conversation id). Turn 2+ cached tokens show
# whether a conversation stayed on the worker holding its KV. One call (~4-5 min).
#   bash scripts/gpu/router_demo.sh
set -uo pipefail
source scripts/gpu/sglang_env.sh
D=${DRAFTER:-/tmp/sgcarry/drafter}
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
R=runs/router; mkdir -p $R
wait_up() {  # wait_up NAME PORT
  wait_healthy $2 "$(cat $R/$1.pid)" $R/$1.log && echo "$1 up after ${SECONDS}s"
}
worker() {  # worker NAME PORT
  python3 -m sglang.launch_server --model-path "$M" --speculative-algorithm DFLASH \
    --speculative-draft-model-path "$D" --attention-backend triton --sampling-backend pytorch \
    --dtype bfloat16 --mem-fraction-static 0.35 --cuda-graph-max-bs-decode 8 \
    --enable-cache-report --host 127.0.0.1 --port $2 > $R/$1.log 2>&1 &
  echo $! > $R/$1.pid
}
worker w1 30001; sleep 20; worker w2 30002
wait_up w1 30001 && wait_up w2 30002 || { tar czf "$OUT/router.tgz" -C $R .; exit 1; }
for policy in round_robin cache_aware manual; do
  for port in 30001 30002; do
    python3 -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/flush_cache', method='POST'), timeout=10)" || echo "flush $port failed"
  done
  python3 -m sglang_router.launch_router --worker-urls http://127.0.0.1:30001 http://127.0.0.1:30002 \
    --policy $policy --host 127.0.0.1 --port 30000 > $R/router-$policy.log 2>&1 &
  echo $! > $R/router.pid
  wait_up router 30000 || continue
  key=""; [ $policy = manual ] && key=--routing-key
  python3 scripts/gpu/router_turns.py --url http://127.0.0.1:30000 --label $policy $key \
    --out $R/router-$policy.json
  kill -TERM "$(cat $R/router.pid)"; wait "$(cat $R/router.pid)" 2>/dev/null
done
kill -TERM "$(cat $R/w1.pid)" "$(cat $R/w2.pid)"; wait 2>/dev/null
cp $R/router-*.json "$OUT"/; tar czf "$OUT/router-logs.tgz" -C $R .; ls -la "$OUT"
