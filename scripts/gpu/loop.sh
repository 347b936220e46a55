#!/usr/bin/env bash
# Issue 34 item 3 on the lent H200: the recorded-traffic loop, end to end, in two calls.
#   bash scripts/gpu/loop.sh 1  # serve (SGLang + DFLASH) with --record-conversations; a load
#                               # test of 480 courier calls (a domain no training set has:
#                               # scripts/loop/courier.py); datagen from the recording, through
#                               # SGLang and through the embedded engine (issue 32 item 4)
#   bash scripts/gpu/loop.sh 2  # τ of the drafter on the held-out calls; fine-tune it on the
#                               # recorded train calls (--init-from); τ again
# The drafter is the exported bf16 default that scripts/gpu/sglang.sh carried.
set -uo pipefail
source scripts/gpu/sglang_env.sh
D=${DRAFTER:-/tmp/sgcarry/drafter}
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
R=runs/loop; mkdir -p $R
keep() { cp "$@" "$OUT"/ 2>/dev/null; true; }
case "${1:-}" in
1)
  python3 scripts/loop/courier.py --calls 480 --seed 0 --out $R/courier.jsonl
  turns=$(python3 -c "import json,sys; print(sum(sum(m['role'] == 'assistant' for m in json.loads(l)['messages']) + (json.loads(l)['messages'][-1]['role'] != 'assistant') for l in open(sys.argv[1])))" $R/courier.jsonl)
  ts serve --engine sglang --model "$M" --speculator "$D" --port 18011 --grpc-port -1 \
    --record-conversations $R/rec --sglang-arg cuda_graph_max_bs_decode=32 > $R/serve.log 2>&1 &
  pid=$!
  wait_healthy 18011 $pid $R/serve.log
  echo "server up after ${SECONDS}s; $turns turns"
  ts loadtest --url ws://127.0.0.1:18011/v1/responses --workload $R/courier.jsonl --concurrency 16 \
    --requests "$turns" --no-progress --max-error-rate 0.05 --out $R/loadtest.json > $R/loadtest.txt 2>&1
  tail -n 25 $R/loadtest.txt
  kill -TERM $pid; wait $pid; tail -n 3 $R/serve.log
  echo "recorded: $(cat $R/rec/*.jsonl | wc -l) turns after ${SECONDS}s"
  keep $R/loadtest.json $R/loadtest.txt
  tar czf "$OUT/recorded.tgz" -C $R rec courier.jsonl
  ts speculator datagen --engine sglang --from-conversations $R/rec --conversations-heldout-frac 0.3 \
    --max-new-tokens 96 --out $R/data-sglang > $R/datagen-sglang.txt 2>&1
  tail -n 3 $R/datagen-sglang.txt; echo "after ${SECONDS}s"
  ts speculator datagen --from-conversations $R/rec --conversations-heldout-frac 0.3 \
    --max-new-tokens 96 --device cuda --speculator "$D" --max-batch 64 --out $R/data-local \
    > $R/datagen-local.txt 2>&1
  tail -n 3 $R/datagen-local.txt; echo "after ${SECONDS}s"
  keep $R/datagen-*.txt
  tar czf "$OUT/loop-data.tgz" -C $R $(cd $R && ls -d data-* 2>/dev/null)
  ;;
2)
  data=$R/data-local; [ -f $data/meta.json ] || data=$R/data-sglang
  ts speculator eval --data $data --drafter "$D" --device cuda --block-size 8,16 \
    --json $R/tau-before.json 2>&1 | tail -n 8
  ts speculator train --data $data --out $R/ft --init-from "$D" --layers 4 --device cuda \
    --time-budget ${TRAIN_S:-180} --lr 1.5e-4 --no-progress > $R/train.txt 2>&1
  tail -n 8 $R/train.txt; echo "trained after ${SECONDS}s"
  ts speculator eval --data $data --drafter $R/ft/drafter --device cuda --block-size 8,16 \
    --json $R/tau-after.json 2>&1 | tail -n 8
  keep $R/tau-*.json $R/train.txt $R/ft/metrics.json
  ;;
*) echo "usage: bash scripts/gpu/loop.sh 1|2" >&2; exit 2 ;;
esac
ls -la "$OUT"
