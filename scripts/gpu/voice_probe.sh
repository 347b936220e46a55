#!/usr/bin/env bash
# What the production path (turnspec serve --engine sglang, DFLASH with our drafter) answers on
# the hand-written voice turns, by kind: scripts/analysis/voice_answers_probe.py against it.
# After `bash scripts/gpu/sglang.sh unpack`:  bash scripts/gpu/voice_probe.sh [TURNS]
# ($OUT/voice-answers-sglang.json and the server log's tail).
set -uo pipefail
source scripts/gpu/sglang_env.sh
D=${DRAFTER:-/tmp/sgcarry/drafter}
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
R=runs/voice-probe; mkdir -p $R
ts serve --engine sglang --model "$M" --speculator "$D" --port 18021 --grpc-port -1 \
  --sglang-arg cuda_graph_max_bs_decode=32 > $R/serve.log 2>&1 &
pid=$!
wait_healthy 18021 $pid $R/serve.log || exit 1
echo "server up after ${SECONDS}s"
python3 scripts/analysis/voice_answers_probe.py --server sglang=http://127.0.0.1:18021/v1 \
  --turns "${1:-346}" --concurrency 32 --json "$OUT/voice-answers-sglang.json"
echo "probed after ${SECONDS}s"
kill -TERM $pid; wait $pid; tail -n 5 $R/serve.log | cut -c1-300
