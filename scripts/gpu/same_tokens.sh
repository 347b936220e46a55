#!/usr/bin/env bash
# Issue 58 item 2: the decomposition on the same tokens, in ONE device call after
# `bash scripts/gpu/sglang.sh unpack` (the drafter at /tmp/sgcarry/drafter, the model prepared):
#   bash scripts/gpu/same_tokens.sh
# At concurrency 1, 8 and 32, the voice turns (a) without tools, (b) with the tools in the
# prompt and no grammar, (c) with tools and the grammar, each through
#   ts: turnspec serve --engine sglang (WS, every turn's whole history: --resend-history), and
#   sg: python -m sglang.launch_server (its native /generate on the prompt ids turnspec renders,
#       `turnspec workload render`; in (c) the same structural tag),
# DFLASH with the exported drafter on both, both servers up at once on half the GPU each and
# measured one after the other. Then the cold tool sets through turnspec over SGLang
# (`bench frontend --tool-sets --url`: first turn, next turn, first turn after a warm-up).
# Table: scripts/gpu/same_tokens_table.py; JSONs, tables and logs: $OUT/same-tokens.tgz.
# Knobs: CONVS (40 conversations rendered), LEVELS (1,8,32), DUR (10 s a level), MAXTOK (96).
# Off the device (no /tmp/sgsite) it is a dry run on the CPU: the repo's .venv, turnspec serve
# --engine local with the default drafter, LEVELS=1,2 DUR=4 CONVS=4; SGLang's server is not
# here, so its command is printed and its half skipped.
set -uo pipefail
if [ -d /tmp/sgsite ]; then
  source scripts/gpu/sglang_env.sh
  D=${DRAFTER:-/tmp/sgcarry/drafter}; ENGINE=sglang; DRY=
  PY=python3; LEVELS=${LEVELS:-1,8,32}; DUR=${DUR:-10}; CONVS=${CONVS:-40}
  TS_ENGINE_ARGS=(--sglang-mem-fraction 0.4 --sglang-arg cuda_graph_max_bs_decode=32
                  --sglang-arg sleep_on_idle=true)  # the idle one of the two does not spin a core
else
  ts() { .venv/bin/turnspec "$@"; }
  HEALTH_PY=.venv/bin/python; source scripts/gpu/health.sh
  D=${DRAFTER:-default}; ENGINE=local; DRY=1; OUT=${OUT:-/tmp/same-tokens-out}
  PY=.venv/bin/python; LEVELS=${LEVELS:-1,2}; DUR=${DUR:-4}; CONVS=${CONVS:-4}
  TS_ENGINE_ARGS=(--max-batch 8)
fi
MAXTOK=${MAXTOK:-96}
M=$(ts models prepare 2>/dev/null | tail -n 1)
R=runs/same-tokens; rm -rf $R; mkdir -p $R "$OUT"
SG_CMD=(python3 -m sglang.launch_server --model-path "$M" --speculative-algorithm DFLASH
  --speculative-draft-model-path "$D" --attention-backend triton --sampling-backend pytorch
  --grammar-backend xgrammar --dtype bfloat16 --mem-fraction-static 0.4
  --cuda-graph-max-bs-decode 32 --enable-metrics --sleep-on-idle --host 127.0.0.1 --port 18012)
up() {  # up NAME PORT CMD...: start a server in the background
  local name=$1 port=$2; shift 2
  "$@" > $R/$name.log 2>&1 & echo $! > $R/$name.pid
}
down() { kill -TERM "$(cat $R/$1.pid)" 2>/dev/null; wait "$(cat $R/$1.pid)" 2>/dev/null; true; }
load() {  # load NAME URL FILE MODE [ARGS...]
  local name=$1 url=$2 file=$3 mode=$4; shift 4
  ts loadtest --url "$url" --workload "$file" --tool-mode "$mode" --sweep "$LEVELS" \
    --duration "$DUR" --warmup 2 --grace 10 --no-progress --history '' --max-tokens "$MAXTOK" \
    --out $R/$name.json "$@" > $R/$name.txt 2>&1
  echo "== $name after ${SECONDS}s"; grep -E '^(turns:|TTFT )' $R/$name.txt
}

# 1. the prompts turnspec renders for every turn, with and without the tools in them
ts workload render --out $R/tools.jsonl --conversations "$CONVS" --max-tokens "$MAXTOK" --model "$M"
ts workload render --out $R/no-tools.jsonl --conversations "$CONVS" --max-tokens "$MAXTOK" \
  --model "$M" --no-tools
# 2. both servers at once; SGLang's own streams incrementally where its version can
up ts 18011 ts serve --engine $ENGINE --model "$M" --speculator "$D" --port 18011 --grpc-port -1 \
  "${TS_ENGINE_ARGS[@]}"
if [ -z "$DRY" ]; then
  python3 -m sglang.launch_server --help 2>/dev/null | grep -q -- --incremental-streaming-output \
    && SG_CMD+=(--incremental-streaming-output)
  up sg 18012 "${SG_CMD[@]}"
else
  echo "dry run: SGLang's server would run as: ${SG_CMD[*]}"
fi
wait_healthy 18011 "$(cat $R/ts.pid)" $R/ts.log 600 && echo "ts up after ${SECONDS}s" || exit 1
[ -n "$DRY" ] || { wait_healthy 18012 "$(cat $R/sg.pid)" $R/sg.log 600 && echo "sg up after ${SECONDS}s"; } || exit 1
# 3. per mode: turnspec, then SGLang, on the same file
for mode in none prompt grammar; do
  file=$R/tools.jsonl; [ $mode = none ] && file=$R/no-tools.jsonl
  load ts-$mode ws://127.0.0.1:18011/v1/responses $file $mode --resend-history
  [ -n "$DRY" ] || load sg-$mode http://127.0.0.1:18012/generate $file $mode
done
# 4. a never-seen tool set's first turn against its next, and after a warm-up
ts bench frontend --tool-sets "${TOOL_SETS:-5}" --url ws://127.0.0.1:18011/v1/responses \
  --json $R/cold-tools.json 2>&1 | tail -n 8
down ts; [ -n "$DRY" ] || down sg
[ -n "$DRY" ] || $PY scripts/gpu/same_tokens_table.py $R --json $R/same-tokens.json
tar czf "$OUT/same-tokens.tgz" -C $R $(cd $R && ls *.json *.txt *.log 2>/dev/null)
cp $R/cold-tools.json "$OUT"/ 2>/dev/null; [ -f $R/same-tokens.json ] && cp $R/same-tokens.json "$OUT"/
ls -la "$OUT"
