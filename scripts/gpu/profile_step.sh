#!/usr/bin/env bash
# Where a speculative step's time goes under load: SGLang's own server (DFLASH, the plugin armed
# with TURNSPEC_SGLANG_SPEC = each of MODES, as plugin_load.sh's sg-lookup runs it: CUDA graphs
# to 32; WORKLOAD generic: the generic prompts' ids on /generate; voice: the voice turns' ids
# with their tools' structural tags; both as plugin_load.sh sends them, independent_set.sh),
# `turnspec loadtest` at each of LEVELS for each of WORKLOADS (one server start for all), and a
# torch profiler trace of STEPS decode steps taken mid-run through SGLang's /start_profile.
# After sglang.sh unpack:
#   MODES="trees lookup" LEVELS="1 32" [WORKLOADS="voice generic"] bash scripts/gpu/profile_step.sh
# MODES: off (stock DFLASH), lookup, trees, graphs (trees with TURNSPEC_SGLANG_APPEND_GRAPHS=1),
# none (SGLang without speculation), plain (trees with TURNSPEC_SGLANG_WIDTH=plain: every decode
# step the plugin's plain step on DFLASH's path; its cost against none's), plaingraphs (the same
# with the append graphs).
# Each mode's loadtest text and step summaries (trace_steps.py, read on the device) land in
# $OUT/prof-MODE.tgz (WORKLOAD/cC*) once that mode is done; KEEP_TRACES=1 adds the raw traces
# (~60 MB a mode and workload).
set -uo pipefail
source scripts/gpu/sglang_env.sh
R=runs/prof; mkdir -p $R; MODES=${MODES:-trees lookup}; LEVELS=${LEVELS:-1 32}
declare -A PORT=([off]=18040 [lookup]=18041 [trees]=18042 [graphs]=18043 [none]=18044
                 [plain]=18045 [plaingraphs]=18046)
M=$(ts models prepare 2>/dev/null | tail -n 1)
source scripts/gpu/independent_set.sh
WORKLOADS=${WORKLOADS:-${WORKLOAD:-generic}}
declare -A TM MAXTOK  # each load's tools mode and answer length
for w in $WORKLOADS; do
  case $w in
    generic) TM[$w]=none; MAXTOK[$w]=$GENERIC_TOKENS ;;
    voice) TM[$w]=grammar; MAXTOK[$w]=$VOICE_TOKENS ;;
    *) echo "WORKLOADS: $w: expected generic or voice" >&2; exit 2 ;;
  esac
  render_ids "$w" $R/ids-$w.jsonl > /dev/null || exit 1
done
for m in $MODES; do  # every server at once, STAGGER s apart; each KV pool capped at KV_TOKENS,
  # which each reaches whichever profiles its memory last (plugin_load.sh says why)
  [ -n "${PORT[$m]:-}" ] || { echo "MODES: $m: expected one of ${!PORT[*]}" >&2; exit 2; }
  spec=$m ag=0 width=fixed dflash=(--speculative-algorithm DFLASH
                                   --speculative-draft-model-path /tmp/sgcarry/drafter)
  case $m in
    graphs) spec=trees ag=1 ;;
    none) spec=off dflash=() ;;
    plain) spec=trees width=plain ;;
    plaingraphs) spec=trees width=plain ag=1 ;;
  esac
  TURNSPEC_SGLANG_SPEC=$spec TURNSPEC_SGLANG_APPEND_GRAPHS=$ag TURNSPEC_SGLANG_WIDTH=$width \
  setsid nohup python3 -m sglang.launch_server --model-path "$M" "${dflash[@]}" \
    "${SG_SERVER_FLAGS[@]}" --mem-fraction-static "${MEM:-0.3}" \
    --max-total-tokens "${KV_TOKENS:-100000}" --port "${PORT[$m]}" > $R/$m-server.log 2>&1 < /dev/null &
  echo $! > $R/$m.pid; sleep "${STAGGER:-10}"
done
for m in $MODES; do
  p=${PORT[$m]}; mkdir -p $R/$m
  wait_healthy "$p" "$(cat $R/$m.pid)" $R/$m-server.log || continue
  echo "== $m up after ${SECONDS}s"
  for w in $WORKLOADS; do for c in $LEVELS; do
    d=$R/$m/$w; mkdir -p $d/c$c
    ts loadtest --url http://127.0.0.1:$p/generate --workload $R/ids-$w.jsonl \
      --tool-mode ${TM[$w]} --sweep "$c" --duration "${DUR:-8}" --warmup 2 --grace 10 \
      --no-progress --history '' --max-tokens ${MAXTOK[$w]} --out $d/c$c.json > $d/c$c.txt 2>&1 &
    lt=$!; sleep $(( ${DUR:-8} / 2 + 2 ))
    curl -s http://127.0.0.1:$p/start_profile -H 'content-type: application/json' \
      -d "{\"output_dir\": \"$PWD/$d/c$c\", \"num_steps\": ${STEPS:-16}, \"activities\": [\"CPU\", \"GPU\"]}" > /dev/null
    wait $lt
    for _ in $(seq 30); do  # the profiler's trace written out (its size steady over a second)
      a=$(du -cb $d/c$c/*.trace.json.gz 2>/dev/null | tail -n 1 | cut -f1); sleep 1
      b=$(du -cb $d/c$c/*.trace.json.gz 2>/dev/null | tail -n 1 | cut -f1)
      [ "${a:-0}" -gt 0 ] && [ "$a" = "$b" ] && break
    done
    echo "== $m $w at $c streams"; grep -E '^(turns:|TTFT |ITL |server (prefill|decode|host))' $d/c$c.txt
    : > $d/c$c-steps.txt  # each trace's steps (wall, launches, GPU time; host by hook)
    for t in $d/c$c/*.trace.json.gz; do
      [ -f "$t" ] || { echo "no trace for $m $w at $c streams" | tee -a $d/c$c-steps.txt; continue; }
      { echo "== $(basename "$t")"; python3 scripts/gpu/trace_steps.py "$t" 2>&1; } >> $d/c$c-steps.txt
    done
    head -n 40 $d/c$c-steps.txt
  done; done
  kill -TERM -- -"$(cat $R/$m.pid)" 2>/dev/null
  cp $R/$m-server.log $R/$m/  # the raw traces only with KEEP_TRACES=1: two modes' ran past
  ex=(--exclude='*.trace.json.gz'); [ "${KEEP_TRACES:-0}" = 1 ] && ex=()  # what a call brings back
  tar czf "$OUT/prof-$m.tgz" "${ex[@]}" -C $R/$m .
done
sleep 3; for m in $MODES; do kill -KILL -- -"$(cat $R/$m.pid)" 2>/dev/null; done; true
