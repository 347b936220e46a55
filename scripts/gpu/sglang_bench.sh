#!/usr/bin/env bash
# The GPU benchmark of issue 32 item 2, in two calls (each stays inside the 10-minute limit):
#   bash scripts/gpu/sglang_bench.sh 1   # (a) serve --engine sglang + DFLASH, (b) without
#   bash scripts/gpu/sglang_bench.sh 2   # (c) serve --engine local --device cuda + DFlash,
#                                        # (d) SGLang's own OpenAI server + DFLASH
# Each target gets `turnspec loadtest --sweep 1,8,32` with the voice workload over its voice
# transport (WS for turnspec, HTTP for SGLang's server), and (a) and (d) also over HTTP with
# synthetic prompts of the same token lengths (the two servers render tools differently, so only
# equal prompts compare front ends). JSONs, tables and server logs land in $OUT/bench-*.tgz.
set -uo pipefail
source scripts/gpu/sglang_env.sh
D=${DRAFTER:-/tmp/sgcarry/drafter}
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
R=runs/sglang-bench; mkdir -p $R
LT="--sweep 1,8,32 --duration ${DUR:-12} --warmup 2 --grace 10 --no-progress ${LT_EXTRA:-}"
SGL="--sglang-arg cuda_graph_max_bs_decode=32"
up() {  # up NAME PORT CMD...: start a server, wait until it answers
  local name=$1 port=$2; shift 2
  "$@" > $R/$name.log 2>&1 & echo $! > $R/$name.pid
  wait_healthy $port "$(cat $R/$name.pid)" $R/$name.log 600 && echo "$name up after ${SECONDS}s"
}
down() { kill -TERM "$(cat $R/$1.pid)" 2>/dev/null; wait "$(cat $R/$1.pid)" 2>/dev/null; true; }
load() {  # load NAME URL WORKLOAD
  ts loadtest --url "$2" --workload "$3" $LT --out $R/$1.json > $R/$1.txt 2>&1
  tail -n 40 $R/$1.txt
}
case "${1:-}" in
1)
  up a 18001 ts serve --engine sglang --model "$M" --speculator "$D" --port 18001 --grpc-port -1 $SGL &&
    { load a-ws ws://127.0.0.1:18001/v1/responses voice
      load a-http http://127.0.0.1:18001/v1 synthetic:900,64; }
  down a
  up b 18002 ts serve --engine sglang --model "$M" --speculator none --port 18002 --grpc-port -1 $SGL &&
    load b-ws ws://127.0.0.1:18002/v1/responses voice
  down b
  ;;
2)
  [ -f $R/c-ws.json ] || {  # (a rerun after (d) failed keeps (c))
  up c 18003 ts serve --engine local --device cuda --model "$M" --speculator "$D" --port 18003 --grpc-port -1 &&
    load c-ws ws://127.0.0.1:18003/v1/responses voice
  down c; }
  up d 18004 python3 -m sglang.launch_server --model-path "$M" --speculative-algorithm DFLASH \
      --speculative-draft-model-path "$D" --attention-backend triton --sampling-backend pytorch \
      --dtype bfloat16 --mem-fraction-static 0.85 --cuda-graph-max-bs-decode 32 --enable-metrics \
      --host 127.0.0.1 --port 18004 &&
    { load d-http-voice http://127.0.0.1:18004/v1 voice
      load d-http http://127.0.0.1:18004/v1 synthetic:900,64; }
  down d
  ;;
*) echo "usage: bash scripts/gpu/sglang_bench.sh 1|2" >&2; exit 2 ;;
esac
tar czf "$OUT/bench-$1.tgz" -C $R .
ls -la "$OUT"
