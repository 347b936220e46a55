#!/usr/bin/env bash
# Issue 53: output tok/s of turnspec's speculator inside SGLang, against stock DFLASH and no
# speculation on the same GPU, and SGLang's own server with the plugin, after
# `bash scripts/gpu/sglang.sh unpack` (the drafter at /tmp/sgcarry/drafter):
#   bash scripts/gpu/plugin_load.sh up        # every server at once, each on a slice of the GPU
#   bash scripts/gpu/plugin_load.sh run voice # one server after another (the others idle):
#   bash scripts/gpu/plugin_load.sh run generic  # `turnspec loadtest --sweep`, then `down`
# Servers: ts-none (--speculator none), ts-stock (DFLASH, the drafter alone), ts-lookup
# (DFLASH + --sglang-spec lookup --sglang-spec-plan-at verify: planned on the host), ts-device
# (the default, planned on the GPU), ts-trees (--sglang-spec trees: verify trees), ts-trees32 (the
# same with --spec-block-size 32: a 32-node tree a row, the drafter's block of 16 beside more
# branches), ts-served (trees or plain decode, step by step: --sglang-spec-width served),
# ts-trees-asyncio (ts-trees on the standard asyncio loop instead of uvloop), ts-early (ts-trees
# with --sglang-early-first-token $EARLY_ROWS, 8: a decode step of <= 8 rows after a prefill is
# launched once its first token is out), all `turnspec
# serve --engine sglang`; sg-lookup is `python -m sglang.launch_server` with DFLASH and the
# plugin armed (TURNSPEC_SGLANG_SPEC=$SG_SPEC: lookup, or trees).
# `up` also times the plugin's grammar walk against SGLang's on this host (grammar-walk.txt).
# Workloads: the independent set (speculator/eval/): voice conversations over WS, every turn's
# scripted history resent (the same prompt ids on every server), tools with the grammar; generic
# prompts over HTTP. SGLang's own server gets the ids turnspec renders on its /generate (the same
# structural tag in voice). Table: scripts/gpu/plugin_load_table.py; all in $OUT/plugin-load.tgz.
# NAME-WORKLOAD-cpu.txt: each server process's CPU over its sweep (proc_cpu.py: which one is busy),
# and the host's pace beside it (a fixed loop's µs, each second: a slow host shows there).
# Knobs: DETAILS (1: each sweep's per-turn CSV too, NAME-details.csv), SG_PLAN_AT (sg-lookup's
# TURNSPEC_SGLANG_PLAN_AT, default device), LEVELS (1,8,32), DUR
# (20 s a level: cells of 10 s swung 20-30%), ROUNDS (1: each server's sweep once; N > 1 writes
# NAME-WORKLOAD-rK.json, servers in reverse order on even rounds, and the table takes each cell's
# median over the rounds: back-to-back 12 s windows of one server at one stream swung 375-502
# tok/s on one H100, as much as any two servers differed; ROUND=K runs round K alone, so the
# rounds of a long sweep can go one call each), MEM (0.3: SGLang's mem_fraction_static a server),
# KV_TOKENS (100000: every server's KV pool, in tokens; see below), SERVERS, VOICE_TOOLS
# (grammar, or none: the voice turns without it, as NAME-voice-tools-none.json), UP_S (300: how long `up` waits; it reports
# each server as it comes up, and the logs of the rest), TS_ARGS / SG_ARGS (more arguments for every
# `turnspec serve` / for SGLang's own server, e.g. TS_ARGS="--sglang-arg log_level=info": then `run`
# counts each server's prefill batches with and without SGLang's prefill CUDA graph in its log).
# Idle servers sleep (SGLang's sleep_on_idle, on every server): by default an idle scheduler spins
# a core at 100% in its housekeeping loop, two or more of them beside the one being measured.
# Pools: SGLang sizes a server's KV pool as the memory free when it profiles less a share of what
# was free at its start, so servers loading side by side race for it (the suspect when a stock
# server queued requests for 400 ms at 8 streams). Every server's pool is capped at KV_TOKENS,
# which each can reach whatever the order; `up` and `run` print the pools and fail on a short one.
# Off the device (no /tmp/sgsite, no GPU): a dry run on the CPU with the repo's .venv, ts-none and
# ts-stock on --engine local, LEVELS=1,2 DUR=3; the SGLang-only servers are skipped. A GPU host
# without /tmp/sgsite is refused (exit 2): sglang.sh unpack first.
set -uo pipefail
R=runs/plugin-load; mkdir -p $R
if [ -d /tmp/sgsite ]; then
  source scripts/gpu/sglang_env.sh
  D=${DRAFTER:-/tmp/sgcarry/drafter}; DRY=; PY=python3
  LEVELS=${LEVELS:-1,8,32}; DUR=${DUR:-20}
  KV=${KV_TOKENS:-100000}
  ENG=(--engine sglang --sglang-mem-fraction "${MEM:-0.3}" --sglang-arg cuda_graph_max_bs_decode=32
       --sglang-arg "max_total_tokens=$KV" --sglang-arg sleep_on_idle=true)
  SERVERS=${SERVERS:-ts-none ts-stock ts-lookup ts-device sg-lookup}
elif nvidia-smi -L > /dev/null 2>&1; then  # a GPU without the carried SGLang: no dry run here
  echo "no /tmp/sgsite on this GPU machine: run bash scripts/gpu/sglang.sh unpack first" >&2; exit 2
else
  ts() { .venv/bin/turnspec "$@"; }
  HEALTH_PY=.venv/bin/python; source scripts/gpu/health.sh
  D=${DRAFTER:-default}; DRY=1; PY=.venv/bin/python; OUT=${OUT:-/tmp/plugin-load-out}
  LEVELS=${LEVELS:-1,2}; DUR=${DUR:-3}
  ENG=(--engine local --max-batch 8)
  SERVERS="ts-none ts-stock"
fi
mkdir -p "$OUT"
M=$(ts models prepare 2>/dev/null | tail -n 1)
source scripts/gpu/independent_set.sh  # render_ids, VOICE_TOKENS, GENERIC_TOKENS
ROUNDS=${ROUNDS:-1}               # each server's sweep this many times, in alternating order
SG_PLAN_AT=${SG_PLAN_AT:-device}  # sg-lookup's plan point; its peer for the 5% bar plans there too
SG_SPEC=${SG_SPEC:-lookup}        # sg-lookup's TURNSPEC_SGLANG_SPEC: lookup, or trees
VT=${VOICE_TOOLS:-grammar}        # voice's --tool-mode: none runs the same turns without the
                                  # grammar (is τ as served below the batch check's for it?)
declare -A PEER=([verify]=ts-lookup [device]=ts-device [trees]=ts-trees)
SG_WIDTH=${SG_WIDTH:-fixed}       # sg-lookup's TURNSPEC_SGLANG_WIDTH (served: its peer is ts-served)
read -r -a more <<< "${TS_ARGS:-}"; read -r -a sg_more <<< "${SG_ARGS:-}"  # extra server flags
declare -A PORT=([ts-none]=18031 [ts-stock]=18032 [ts-lookup]=18033 [sg-lookup]=18034 [ts-device]=18036
                 [ts-trees]=18037 [ts-trees32]=18038 [ts-served]=18039
                 [ts-trees-asyncio]=18040 [ts-early]=18041)
start() {  # start NAME: the server in the background, its log and pid under $R
  local name=$1 port=${PORT[$1]} args=()
  case $name in
    ts-none) args=(--speculator none) ;;
    ts-stock) args=(--speculator "$D") ;;
    ts-lookup) args=(--speculator "$D" --sglang-spec lookup --sglang-spec-plan-at verify) ;;
    ts-device) args=(--speculator "$D" --sglang-spec lookup --sglang-spec-plan-at device) ;;
    ts-trees) args=(--speculator "$D" --sglang-spec trees) ;;
    ts-trees32) args=(--speculator "$D" --sglang-spec trees --spec-block-size 32) ;;
    ts-trees-asyncio) args=(--speculator "$D" --sglang-spec trees --event-loop asyncio) ;;
    ts-served) args=(--speculator "$D" --sglang-spec trees --sglang-spec-width served) ;;
    ts-early) args=(--speculator "$D" --sglang-spec trees --sglang-early-first-token "${EARLY_ROWS:-8}") ;;
  esac
  if [ "$name" = sg-lookup ]; then
    TURNSPEC_SGLANG_SPEC=$SG_SPEC TURNSPEC_SGLANG_PLAN_AT=$SG_PLAN_AT TURNSPEC_SGLANG_WIDTH=$SG_WIDTH setsid nohup python3 -m sglang.launch_server --model-path "$M" \
      --speculative-algorithm DFLASH --speculative-draft-model-path "$D" "${SG_SERVER_FLAGS[@]}" \
      --mem-fraction-static "${MEM:-0.3}" --max-total-tokens "$KV" \
      --port "$port" "${sg_more[@]}" > $R/$name.log 2>&1 < /dev/null &
  else
    setsid nohup "$PY" -m turnspec.cli.main serve "${ENG[@]}" --model "$M" "${args[@]}" \
      --port "$port" --grpc-port -1 "${more[@]}" > $R/$name.log 2>&1 < /dev/null &
  fi
  echo $! > $R/$name.pid
}
down() { for n in $SERVERS; do [ -f $R/$n.pid ] && kill -TERM -- -"$(cat $R/$n.pid)" 2>/dev/null; done
         sleep 5; for n in $SERVERS; do [ -f $R/$n.pid ] && kill -KILL -- -"$(cat $R/$n.pid)" 2>/dev/null; done; true; }
load() {  # load NAME URL FILE MODE MAXTOK [ARGS...]
  local name=$1 url=$2 file=$3 mode=$4 maxtok=$5 det=(); shift 5
  [ "${DETAILS:-0}" = 1 ] && det=(--details "$R/$name-details.csv")
  ts loadtest --url "$url" --workload "$file" --tool-mode "$mode" --sweep "$LEVELS" \
    --duration "$DUR" --warmup 2 --grace 10 --no-progress --history '' --max-tokens "$maxtok" \
    --out $R/$name.json "${det[@]}" "$@" > $R/$name.txt 2>&1
  echo "== $name after ${SECONDS}s"; grep -E '^(turns:|TTFT )' $R/$name.txt
}
pool() {  # pool NAME: its KV pool in tokens as the server reports it (0: not reported yet)
  local p=${PORT[$1]}
  if [ "${1%%-*}" = sg ]; then curl -s "http://127.0.0.1:$p/server_info" | $PY -c \
    'import json, sys; print(int(json.load(sys.stdin).get("max_total_num_tokens") or 0))' 2>/dev/null || echo 0
  else curl -s "http://127.0.0.1:$p/metrics" | awk '/^turnspec_engine_total_kv_blocks/ {v = int($2)}
    END {print v + 0}'; fi
}
pools() {  # every server's pool; one reported short of KV_TOKENS fails the call (turnspec's
  local short=  # servers report theirs once SGLang published a load snapshot: after a prefill)
  for n in $SERVERS; do
    t=$(pool "$n")
    if [ "$t" -eq 0 ]; then echo "$n KV pool: not reported yet"; continue; fi
    echo "$n KV pool: $t tokens"; [ "$t" -lt "$KV" ] && short+=" $n"
  done
  [ -z "$short" ] || { echo "pool short of KV_TOKENS=$KV on:$short (raise MEM or STAGGER)"; return 1; }
}
sweep() {  # sweep NAME WORKLOAD SUFFIX: one server's levels, its processes' CPU beside
  local n=$1 wl=$2 sfx=$3 p=${PORT[$1]} pg t0=$SECONDS
  pg=$(cat $R/$n.pid)
  healthy "$p" || { echo "$n is not up: no ratio without it"; tail -n 20 $R/$n.log; exit 1; }
  $PY scripts/gpu/proc_cpu.py snap "$pg" > $R/cpu0.json
  $PY scripts/gpu/proc_cpu.py pace > $R/pace.txt & local pace=$!  # the host's pace beside
  case $n:$wl in
    sg-*:voice) load $n-$vs$sfx http://127.0.0.1:$p/generate $R/voice-ids.jsonl "$VT" \
                  "$VOICE_TOKENS" ;;
    sg-*:generic) load $n-generic$sfx http://127.0.0.1:$p/generate $R/generic-ids.jsonl none \
                    "$GENERIC_TOKENS" ;;
    *:voice) load $n-$vs$sfx ws://127.0.0.1:$p/v1/responses speculator/eval/voice.jsonl \
               "$VT" "$VOICE_TOKENS" --resend-history ;;
    *:generic) load $n-generic$sfx http://127.0.0.1:$p/v1 speculator/eval/generic.jsonl none \
                 "$GENERIC_TOKENS" ;;
  esac
  kill "$pace"; wait "$pace"
  { $PY scripts/gpu/proc_cpu.py diff $R/cpu0.json "$pg" $((SECONDS - t0 + 1)); cat $R/pace.txt; } \
    > $R/$n-$wl$sfx-cpu.txt
  head -n 4 $R/$n-$wl$sfx-cpu.txt; grep '^host pace:' $R/$n-$wl$sfx-cpu.txt
}
pack() { tar czf "$OUT/plugin-load.tgz" -C $R $(cd $R && ls *.json *.txt *.log *.csv 2>/dev/null); }
info() {  # the plugin's counters from SGLang's own server info (sg-lookup only)
  curl -s "http://127.0.0.1:${PORT[sg-lookup]}/server_info" > $R/sg-lookup-info-$1.json || true
}
case "${1:-}" in
up)
  render_ids voice $R/voice-ids.jsonl
  render_ids generic $R/generic-ids.jsonl
  if [ -z "$DRY" ]; then  # ~10 s, before the servers load the host
    ts bench grammar-walk --convs 20 --json $R/grammar-walk.json > $R/grammar-walk.txt 2>&1
    tail -n 2 $R/grammar-walk.txt
  fi
  for n in $SERVERS; do start $n; sleep "${STAGGER:-0}"; done  # STAGGER: SGLang sizes its KV
  # cache from the memory free while it loads, which a neighbour loading at once can take
  trap pack EXIT  # the logs come back even when the call runs out of time
  left=" $SERVERS "; dead=; deadline=$((SECONDS + ${UP_S:-300}))
  while [ -n "${left// /}" ] && [ $SECONDS -lt $deadline ]; do  # all at once: who is slow shows
    for n in $left; do
      if healthy "${PORT[$n]}"; then echo "$n up after ${SECONDS}s"; left=${left/ $n / }
      elif ! kill -0 "$(cat $R/$n.pid)" 2>/dev/null; then
        echo "$n died"; tail -n 30 $R/$n.log; left=${left/ $n / }; dead+=" $n"
      fi
    done; sleep 0.5
  done
  for n in $left; do echo "$n not up after ${SECONDS}s"; tail -n 30 $R/$n.log; done
  [ -z "${left// /}$dead" ] || exit 1  # a missing server leaves no ratio; `run` refuses too
  [ -n "$DRY" ] || pools
  ;;
run)
  wl=${2:?run voice|generic}
  vs=voice; [ "$VT" = grammar ] || vs=voice-tools-$VT  # kept apart from the table's voice cells
  first=${ROUND:-1}; last=${ROUND:-$ROUNDS}  # ROUND=K: that round alone (one call a round)
  [ "$first" -ge 1 ] && [ "$last" -le "$ROUNDS" ] ||
    { echo "ROUND=${ROUND:-}: expected 1..ROUNDS (ROUNDS=$ROUNDS)"; exit 2; }
  for r in $(seq "$first" "$last"); do  # even rounds play the servers in reverse order
    order=$SERVERS; [ $((r % 2)) = 0 ] && order=$(printf '%s\n' $SERVERS | tac)
    sfx=; [ "$ROUNDS" -gt 1 ] && sfx=-r$r
    for n in $order; do sweep "$n" "$wl" "$sfx"; done
  done
  [ -n "$DRY" ] || { info "$wl"; pools || echo "(these cells ran on a short pool)"; }
  for n in $SERVERS; do  # SGLang logs its prefill batches at log_level info (its server's default)
    t=$(grep -c 'Prefill batch.*cuda graph: True' $R/$n.log); f=$(grep -c 'Prefill batch.*cuda graph: False' $R/$n.log)
    if [ $((t + f)) -gt 0 ]; then echo "$n prefill batches (log so far): $t with SGLang's prefill CUDA graph, $f without"; fi
  done
  if [ "$wl" = generic ] && [ "$last" = "$ROUNDS" ]; then
    down
    peer=${PEER[$SG_PLAN_AT]}; [ "$SG_SPEC" = trees ] && peer=ts-trees
    [ "$SG_WIDTH" = served ] && peer=ts-served
    $PY scripts/gpu/plugin_load_table.py $R --json $R/plugin-load.json --own-peer "$peer"
  fi
  pack
  ;;
down) down ;;
*) echo "usage: bash scripts/gpu/plugin_load.sh up | run voice|generic | down" >&2; exit 2 ;;
esac
