#!/usr/bin/env bash
# docs/reliability.md's campaign on the SGLang path (`turnspec serve --engine sglang`), on the
# lent GPU after `bash scripts/gpu/sglang.sh unpack` (scripts/gpu/README.md, SGLang section).
# NOT RUN YET: written on a machine without a GPU; every figure it makes is still to be taken.
# Each step fits one device call (10 min); the long ones run detached and are collected later:
#   bash scripts/gpu/reliability_sglang.sh faults        # ~6 min: pytest test_sglang_cuda_faults.py
#                                                        # (scheduler kill -9 under load, a CUDA
#                                                        # error in a step, the 200-client storm)
#   bash scripts/gpu/reliability_sglang.sh bg stress     # `turnspec bench stress` on --engine
#                                                        # sglang: fuzz (10,000 hostile messages),
#                                                        # storm (200), overload at 3x capacity
#   bash scripts/gpu/reliability_sglang.sh wait stress 540
#   bash scripts/gpu/reliability_sglang.sh bg soak       # SOAK_S (720) s of the voice workload at
#                                                        # concurrency 8 with barge-ins: GPU memory,
#                                                        # host RSS, open fds every 10 s
#   bash scripts/gpu/reliability_sglang.sh wait soak 540 # (twice: the soak outlasts one call)
# Env: SPECULATOR (none; /tmp/sgcarry/drafter for the speculation-on column), MAX_RUNNING /
# MAX_QUEUE (32 / 16: the overload server's admission), SLO_TTFT_MS (1000: the overload's SLO,
# a choice, not a measurement), MESSAGES (10000), SOAK_S (720), BARGE_IN (0.25).
# JSON lands in runs/reliability/out-STEP and is copied to $OUT: sglang_faults_*.json,
# stress.json, soak.json (+ soak.jsonl, soak_loadtest.json), each server's log.
set -uo pipefail
source scripts/gpu/sglang_env.sh
R=runs/reliability; mkdir -p $R
OUT=${OUT:-$R}
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
SPEC=${SPECULATOR:-none}
SGL=(--engine sglang --model "$M" --speculator "$SPEC" --sglang-arg cuda_graph_max_bs_decode=32)
server_args() { for a in "${SGL[@]}"; do printf -- '--server-arg=%s ' "$a"; done; }
case "${1:-}" in
faults)
  TURNSPEC_SGLANG_SPECULATOR=$SPEC python3 -m pytest -q -p no:cacheprovider \
    tests/engine/test_sglang_cuda_faults.py 2>&1 | tail -n 40
  ;;
stress)  # fuzz + storm on one server, overload on a second (benchmarks/stress/cli.py)
  # shellcheck disable=SC2046
  ts bench stress --messages "${MESSAGES:-10000}" --storm-clients 200 \
    --overload-factor 3 --overload-running "${MAX_RUNNING:-32}" \
    --overload-queue "${MAX_QUEUE:-16}" --overload-seconds 60 \
    --slo-ttft-ms "${SLO_TTFT_MS:-1000}" $(server_args) --json "$OUT/stress.json" 2>&1 |
    tail -n 30
  ;;
soak)
  port=18054
  ts serve "${SGL[@]}" --port $port --grpc-port -1 > "$OUT/soak-server.log" 2>&1 &
  pid=$!
  wait_healthy $port $pid "$OUT/soak-server.log" 600 || exit 1
  python3 scripts/gpu/soak_sample.py --pid $pid --port $port --seconds "${SOAK_S:-720}" \
    --out "$OUT/soak.jsonl" &
  sampler=$!
  ts loadtest --url ws://127.0.0.1:$port/v1/responses --workload voice --concurrency 8 \
    --duration "${SOAK_S:-720}" --warmup 8 --grace 20 --barge-in "${BARGE_IN:-0.25}" \
    --barge-in-after 3 --no-progress --history '' --out "$OUT/soak_loadtest.json" \
    > "$OUT/soak_loadtest.txt" 2>&1
  wait $sampler
  sleep 2  # SGLang idle: its load snapshot is published when it goes idle
  python3 scripts/gpu/soak_sample.py --pid $pid --port $port --seconds 1 --interval 1 \
    --out "$OUT/soak-idle.jsonl"
  python3 scripts/gpu/soak_sample.py --summary "$OUT/soak.jsonl" --warmup-s 120 \
    > "$OUT/soak.json"
  kill -TERM $pid; wait $pid; echo "server exit $?" | tee -a "$OUT/soak-idle.jsonl"
  cat "$OUT/soak.json" "$OUT/soak-idle.jsonl"; tail -n 25 "$OUT/soak_loadtest.txt"
  ;;
bg)  # bg STEP: run it detached (setsid), so a call cut short loses nothing; then STEP.done
  s=${2:?usage: bash scripts/gpu/reliability_sglang.sh bg stress|soak|faults}
  rm -rf $R/out-$s $R/$s.done; mkdir -p $R/out-$s
  OUT=$R/out-$s setsid nohup bash -c \
    "bash scripts/gpu/reliability_sglang.sh $s; touch $R/$s.done" > $R/$s.log 2>&1 < /dev/null &
  echo "started $s (pid $!)"
  ;;
wait)  # wait STEP SECONDS: until STEP.done or SECONDS pass; its log's tail and files to $OUT
  s=${2:?usage: bash scripts/gpu/reliability_sglang.sh wait STEP SECONDS}; t0=$(date +%s)
  [ -f $R/$s.log ] || { echo "no $R/$s.log: a fresh machine, the step is gone" >&2; exit 3; }
  while [ ! -f $R/$s.done ] && [ $(( $(date +%s) - t0 )) -lt "${3:-500}" ]; do sleep 5; done
  tail -n 40 $R/$s.log
  cp $R/out-$s/* "$OUT"/ 2>/dev/null
  [ -f $R/$s.done ] && echo "$s done" || echo "$s still running after $(( $(date +%s) - t0 )) s"
  ;;
*) echo "usage: bash scripts/gpu/reliability_sglang.sh faults|stress|soak|bg STEP|wait STEP S" >&2
   exit 2 ;;
esac
ls -la "$OUT"
