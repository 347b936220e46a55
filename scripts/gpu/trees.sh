#!/usr/bin/env bash
# Wider verify trees on the H200 (issue 34): planned branches up to 16 and the datastore branch,
# scored and timed on the committed H200 answers to the independent set, after
# `bash scripts/gpu/sglang.sh unpack` (the drafter at /tmp/sgcarry/drafter, the model prepared).
# The CPU walk of the same answers (branch_lab.py, docs/history/dflash-2026-12.md §7) predicted
# generic 2.67 (3 first) -> 3.00 (8 planned) -> 3.19 (16 planned) -> 3.25 (+ datastore).
#   bash scripts/gpu/trees.sh tau    # τ as served: speculator eval, 3 first / 8, 16 planned /
#                                    # 16 planned + datastore (one process each, ~1 min)
#   bash scripts/gpu/trees.sh spec   # tok/s one stream: bench spec, 3,8,16 x first,planned
#   bash scripts/gpu/trees.sh ds     # tok/s one stream: 16 planned, datastore off,on
#   bash scripts/gpu/trees.sh load   # turn latency at concurrency 16: serve + loadtest over the
#                                    # independent generic and voice conversations, per config
# DS= the datastore (default: the carried responses-seed18.jsonl.xz). Off the device (no
# /tmp/sgsite) it runs with the repo's .venv, DEV=cpu and D=default, for a dry run with N=2.
set -uo pipefail
if [ -d /tmp/sgsite ]; then
  source scripts/gpu/sglang_env.sh
  D=${D:-/tmp/sgcarry/drafter}; DEV=${DEV:-cuda}; TS=(python3 -m turnspec.cli.main)
else
  TS=(.venv/bin/turnspec)
  ts() { "${TS[@]}" "$@"; }
  healthy() { .venv/bin/python -c "import sys,urllib.request as u; sys.exit(u.urlopen('http://127.0.0.1:$1/health', timeout=2).status != 200)" 2>/dev/null; }
  D=${D:-default}; DEV=${DEV:-cpu}; OUT=${OUT:-/tmp/trees-out}
fi
DS=${DS:-models/data/smollm2-dflash/responses-seed18.jsonl.xz}
EV=runs/evalset; R=runs/trees
mkdir -p "$EV" "$R" "$OUT"
[ -s "$EV/samples.jsonl" ] || zcat docs/gpu-runs/2026-12-04-copy-rule/evalset-samples.jsonl.gz > "$EV/samples.jsonl"
keep() { cp "$@" "$OUT"/ 2>/dev/null; true; }
spec() {  # spec NAME ARGS...: one bench spec run over the independent set, B=16, always
  local name=$1; shift
  ts bench spec --data "$EV" --device "$DEV" --speculator "$D" --blocks 16 --policies always \
    --lookups on --n "${N:-24}" --no-transformers --json "$R/$name.json" "$@" 2>&1 | grep -v '^Loading'
  keep "$R/$name.json"
}
case "${1:-}" in
tau)
  for cfg in "3 first" "8 planned" "16 planned" "16 planned ds"; do
    set -- $cfg; name=tau-$1-$2${3:+-ds}
    echo "== $cfg after ${SECONDS}s"
    ts speculator eval --data "$EV" --drafter "$D" --device "$DEV" --block-size 16 --lookup \
      --branches "$1" --branch-plan "$2" ${3:+--datastore "$DS"} ${SAMPLES:+--samples $SAMPLES} \
      --json "$R/$name.json" 2>&1 | grep -v '^Loading' | tail -n 12
    keep "$R/$name.json"
  done
  ;;
spec) spec spec-trees --branches 3,8,16 --branch-plans first,planned ;;
ds) spec spec-datastore --branches 16 --branch-plans planned --spec-datastore "$DS" --datastores off,on ;;
load)   # one server per config, the same turns through each; concurrency 16
  port=18020
  for cfg in ${CONFIGS:-"3:first:0" "16:planned:32" "8:planned:32"}; do
    IFS=: read -r b plan rows <<< "$cfg"; port=$((port + 1))
    rowargs=(); [ "$rows" != 0 ] && rowargs=(--spec-branch-rows "$rows")
    "${TS[@]}" serve --device "$DEV" --speculator "$D" --spec-policy always --spec-branches "$b" \
      --spec-branch-plan "$plan" "${rowargs[@]}" --port $port --grpc-port -1 --max-batch 32 \
      > "$R/serve-$b-$plan-$rows.log" 2>&1 &
    pid=$!   # the server itself (not a function's subshell), so TERM reaches it
    for _ in $(seq 600); do healthy $port && break; kill -0 $pid 2>/dev/null || break; sleep 0.5; done
    healthy $port || { echo "server $cfg not up"; tail -n 20 "$R/serve-$b-$plan-$rows.log"; kill $pid; continue; }
    echo "== $cfg: server up after ${SECONDS}s"
    for w in generic voice; do
      ts loadtest --url ws://127.0.0.1:$port/v1/responses --workload speculator/eval/$w.jsonl \
        --concurrency "${C:-16}" --requests "${REQ:-112}" --warmup 4 --max-tokens 160 --no-progress \
        --max-error-rate 0.05 --out "$R/load-$w-$b-$plan-$rows.json" > "$R/load-$w-$b-$plan-$rows.txt" 2>&1
      echo "-- $w ($cfg) after ${SECONDS}s"; sed -n '2p;/^TTFT /p;/^E2E /p;/^server decode/p;/^tau /p' "$R/load-$w-$b-$plan-$rows.txt"
      keep "$R/load-$w-$b-$plan-$rows.json"
    done
    kill -TERM $pid; wait $pid
  done
  tar czf "$OUT/load-logs.tgz" -C "$R" $(cd "$R" && ls load-*.txt serve-*.log 2>/dev/null)
  ;;
*) echo "usage: bash scripts/gpu/trees.sh tau|spec|ds|load" >&2; exit 2 ;;
esac
ls -la "$OUT"
