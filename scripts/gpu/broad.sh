#!/usr/bin/env bash
# Issue 34 item 2 on the lent H200: broad pre-training, then tool fine-tuning, against today's
# recipe and a deeper drafter at equal GPU time. After `bash scripts/gpu/sglang.sh unpack`:
#   bash scripts/gpu/broad.sh data    # (~8 min) SGLang: Magpie user lines from the target, its
#                                     # answers to them; beside it, fresh tool-workload answers
#                                     # and the independent eval set
#   bash scripts/gpu/broad.sh data-local  # the same through six embedded-engine processes
#                                     # (TOOL_GRAMMAR=1: tool turns answered under the server's
#                                     # tool grammar, datagen --tool-grammar); its broad
#                                     # answers come back packed (broad-answers parts).
#                                     # REANSWER= earlier sessions' Magpie conversations
#                                     # answered again; PREV= + PREV_CONVS= earlier answers
#                                     # rebuilt without the target (both join the mix arm)
#   bash scripts/gpu/broad.sh all     # data-local, then train, in one detached step
#   bash scripts/gpu/broad.sh train   # the arms one after another, each alone on the GPU for
#                                     # the same budget (TRAIN_S, default 360 s; the step takes
#                                     # ~(TRAIN_S + 40) per arm and ~40 s to score it):
#     today   the default drafter fine-tuned on the fresh tool data (the recipe of runs 14-22)
#     broad   the default drafter, half on the broad data, then half on the tool data
#     mix     the default drafter on the broad and tool data shuffled together (ARMS to pick it)
#     wide    mix with the default's MLP widened to WIDE units (3072; --grow: the added units
#             start silent, so it starts as the default)
#     grow5   the default drafter grown to 5 layers (the added one starts as identity:
#             --grow-layers), then today's recipe
#     scratch4 / scratch5  4 / 5 layers from random weights, half broad then half tool
#   then every arm and the default drafter scored on the independent set (voice, generic), the
#   fresh tool turns held out (in-distribution) and the broad turns held out, at B=16 and 8.
# The data call returns the Magpie lines (magpie.tgz) and the logs; the train call the tau JSON,
# logs and training metrics in broad-train.tgz; `fetch ARM` one arm's drafter; `bench ARM` its decode
# tok/s beside the default's (bench spec --peer-speculator). The long steps go
# detached, one call to start and polls after it (back to back: a machine idle 30 s is gone):
#   CPUS=0-9 bash scripts/gpu/broad.sh bg data-local; bash scripts/gpu/broad.sh wait data-local 500
set -uo pipefail
source scripts/gpu/sglang_env.sh
D=${DRAFTER:-/tmp/sgcarry/drafter}
case "${1:-}" in data|data-local|train)   # the steps that run the target (not bg, wait, fetch)
  M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1) ;; esac
R=runs/broad; mkdir -p $R
T=${TRAIN_S:-360}; H=$((T / 2)); X=${SGARGS:-}; ARMS=${ARMS:-today broad scratch4 scratch5}
keep() { cp "$@" "$OUT"/ 2>/dev/null; true; }
case "${1:-}" in
data)
  ( ts speculator datagen --engine sglang --sglang-mem-fraction 0.35 $X --model "$M" \
      --tool-conversations ${TOOLS:-6000} --heldout-conversations 150 --synthetic-conversations \
      ${SYNTH:-4500} --synthetic-heldout 100 --readback-frac 0.3 --workload 2 --seed ${SEED:-19} \
      --max-new-tokens 192 --no-progress --out $R/data-tools > $R/datagen-tools.txt 2>&1
    ts speculator datagen --engine sglang --sglang-mem-fraction 0.35 $X --model "$M" --eval-set \
      --max-new-tokens 160 --no-progress --out $R/evalset > $R/datagen-evalset.txt 2>&1 ) &
  bg=$!
  ts speculator magpie --engine sglang --sglang-mem-fraction 0.45 $X --model "$M" \
    --conversations ${MAGPIE:-40000} --seed ${SEED:-19} --out $R/magpie > $R/magpie.txt 2>&1
  tail -n 2 $R/magpie.txt; echo "magpie after ${SECONDS}s"
  ts speculator datagen --engine sglang --sglang-mem-fraction 0.45 $X --model "$M" \
    --from-conversations $R/magpie --conversations-heldout-frac 0.03 --max-new-tokens 192 \
    --no-progress --out $R/data-broad > $R/datagen-broad.txt 2>&1
  tail -n 1 $R/datagen-broad.txt; echo "broad answered after ${SECONDS}s"
  wait $bg
  tail -n 1 $R/datagen-tools.txt $R/datagen-evalset.txt; echo "all data after ${SECONDS}s"
  keep $R/magpie.txt $R/magpie/magpie.json $R/datagen-*.txt
  tar czf "$OUT/magpie.tgz" -C $R magpie
  ;;
data-local)  # the same data from the embedded engine in SHARDS processes sharing the GPU (six
             # local shards answered 2x SGLang's samples/s on SmolLM2: docs/benchmarks.md)
  N=${SHARDS:-6}; G=${TOOL_GRAMMAR:+--tool-grammar}   # TOOL_GRAMMAR=1: answers as the server writes them
  # EVAL_GRAMMAR=1: only the independent set under the grammar (11 s alone on the H200); the
  # tool workload under it was still running after 340 s (2026-12-04), all data without 248 s
  GE=${EVAL_GRAMMAR:+--tool-grammar}; GE=${G:-$GE}
  L="--model $M --device ${DEV:-cuda} --threads 1 --max-batch ${MAX_BATCH:-256}
    --kv-memory-gb ${KV_GB:-12} --max-prefill-tokens 32768"
  A="--conversations-heldout-frac 0.03 --max-new-tokens 192 --no-progress $G"
  # REANSWER="F ...": Magpie conversations kept from earlier sessions (models/data/smollm2-dflash/
  # magpie-seedN.jsonl.xz, carried) answered again as more broad data, split over the shards;
  # MAGPIE=0 then samples no fresh lines. Their answers join data-broad.
  rm -rf $R/reconv-* $R/data-reanswer-*
  [ "${MAGPIE:-40000}" -gt 0 ] || rm -rf $R/magpie-* $R/data-broad-*   # none fresh this time
  if [ -n "${REANSWER:-}" ]; then
    for f in $REANSWER; do xzcat -f "$f"; done | split -n r/$N -d -a 2 - $R/reconv-part-
    for i in $(seq 0 $((N - 1))); do mkdir -p $R/reconv-$i
      mv $R/reconv-part-$(printf %02d $i) $R/reconv-$i/conversations-000001.jsonl; done
  fi
  # PREV="P ..." with PREV_CONVS="F ...": broad answers of earlier sessions (their joined
  # broad-answers parts) rebuilt from the conversations they answered, beside the shards; the
  # mix arm trains on them too
  rm -rf $R/prevconv $R/data-prev-*; k=0
  if [ -n "${PREV:-}" ]; then
    mkdir -p $R/prevconv; for f in ${PREV_CONVS:?PREV needs PREV_CONVS}; do
      b=$(basename "$f"); xzcat -f "$f" > $R/prevconv/conversations-${b%%.*}.jsonl; done
    for p in $PREV; do k=$((k + 1))
      ts speculator unpack-responses --model "$M" --responses "$p" --conversations $R/prevconv \
        --out $R/data-prev-$k > $R/unpack-prev-$k.txt 2>&1 &
    done
  fi
  for i in $(seq 0 $((N - 1))); do
    ( if [ "${MAGPIE:-40000}" -gt 0 ]; then
        ts speculator magpie $L --conversations $(( ${MAGPIE:-40000} / N )) \
          --seed $(( ${SEED:-19} * 100 + i )) --out $R/magpie-$i > $R/magpie-$i.txt 2>&1
        ts speculator datagen $L --from-conversations $R/magpie-$i $A --out $R/data-broad-$i \
          > $R/datagen-broad-$i.txt 2>&1
      fi
      [ -d $R/reconv-$i ] && ts speculator datagen $L --from-conversations $R/reconv-$i $A \
        --out $R/data-reanswer-$i > $R/datagen-reanswer-$i.txt 2>&1
      ts speculator datagen $L --tool-conversations ${TOOLS:-6000} --heldout-conversations ${HELDOUT:-150} \
        --synthetic-conversations ${SYNTH:-4500} --synthetic-heldout ${SYNTH_HELDOUT:-100} --readback-frac 0.3 \
        --workload 2 --seed ${SEED:-19} --shard $i/$N --max-new-tokens 192 --no-progress $G \
        --out $R/data-tools-$i > $R/datagen-tools-$i.txt 2>&1 ) &
  done
  [ "${EVALSET:-1}" = 1 ] && ts speculator datagen $L --eval-set --max-new-tokens 160 \
    --no-progress $GE --out $R/evalset > $R/datagen-evalset.txt 2>&1
  wait
  for d in broad tools; do   # one folder each, as train reads: one shard's meta, rows concatenated
    parts=$(ls -d $R/data-$d-* $([ $d = broad ] && echo $R/data-reanswer-*) 2>/dev/null)
    rm -rf $R/data-$d; [ -n "$parts" ] || { echo "$d: none this session"; continue; }
    mkdir -p $R/data-$d && cp "$(echo "$parts" | head -n 1)/meta.json" $R/data-$d/
    for p in $parts; do cat $p/samples.jsonl; done > $R/data-$d/samples.jsonl
    echo "$d: $(wc -l < $R/data-$d/samples.jsonl) samples"
  done
  tail -qn 1 $R/magpie-*.txt 2>/dev/null; echo "all data after ${SECONDS}s"
  tar czf "$OUT/magpie.tgz" -C $R $(cd $R && ls -d magpie-* datagen-*.txt 2>/dev/null)
  # the broad answers as completions only (speculator pack-responses), in 15 MB parts (a file
  # comes back under 16 MiB), beside training: `cat broad-answers.jsonl.xz.part_*` here, then
  # PREV= in a later session rebuilds them from the conversations (no target run)
  [ -d $R/data-broad ] &&
  ( ts speculator pack-responses --data $R/data-broad --out $R/broad-answers.jsonl.xz > $R/pack.txt 2>&1 &&
    split -b 15000000 $R/broad-answers.jsonl.xz "$OUT/broad-answers.jsonl.xz.part_" ) &
  ;;
train)
  common="--model $M --device ${DEV:-cuda} --batch-size ${BATCH:-64} --anchors 64 --epochs 200 --eval-every 0 \
    --log-every 100 --final-eval-samples 64 --no-progress"
  arm() {  # arm NAME LAYERS INIT LR1 LR2: half on broad then half on tools (INIT "" = scratch)
    local name=$1 layers=$2 init=$3 lr1=$4 lr2=$5
    ts speculator train $common --data $R/data-broad --out $R/$name-1 --layers "$layers" \
      ${init:+--init-from $init} --lr "$lr1" --time-budget $H > $R/train-$name-1.txt 2>&1
    ts speculator train $common --data $R/data-tools --out $R/$name --layers "$layers" \
      --init-from $R/$name-1/drafter --lr "$lr2" --time-budget $H > $R/train-$name-2.txt 2>&1
  }
  # One arm at a time: batch-64 steps reserve 55-115 GiB each, so arms side by side ran the GPU
  # out of memory (2026-12-03: today and mix died at their first step) and the survivor got the
  # whole GPU; one after another, each arm has the GPU alone for exactly TRAIN_S.
  sets="--data $R/data-tools"; js=tools   # + this session's broad data, if any (MAGPIE or REANSWER)
  [ -d $R/data-broad ] && sets="$sets --data $R/data-broad" && js="tools broad"
  [ -d $R/evalset ] && sets="--data $R/evalset $sets" && js="evalset $js"
  score() {  # score NAME DRAFTER: every split at B=16 and 8, one arm alone on the GPU. Its
             # numbers go to $OUT at once, so each `wait` brings back the arms done so far and a
             # machine lost later (2026-12-03: twice, both times with every arm) keeps them.
    local a=$1 d=$2
    # shellcheck disable=SC2046  # one --json per --data, in order
    # LOOKUP=1: every split also with prompt lookup (NAME+lookup; doubles the scoring time)
    # BRANCHES=3 (with LOOKUP=1): the lookup split verifies that many blocks a step, as the H200
    # serves (NAME+lookup+3br); PLAN=planned: their swaps planned at every position
    # (NAME+lookup+3br+planned, `serve --spec-branch-plan planned`)
    ts speculator eval $sets --drafter "$d" --device ${DEV:-cuda} --block-size 8,16 ${LOOKUP:+--lookup} \
      ${BRANCHES:+--branches $BRANCHES} ${PLAN:+--branch-plan $PLAN} \
      --samples ${EVAL_SAMPLES:-512} $(for j in $js; do echo --json $R/tau-$a-$j.json; done) \
      > $R/eval-$a.txt 2>&1
    echo "== $a scored after ${SECONDS}s"; grep -v '^{' $R/eval-$a.txt | tail -n 14
    keep $R/tau-$a-*.json $R/eval-$a.txt
  }
  mixdata() {  # data-mix: the tool, broad and carried broad (PREV) samples shuffled together
    [ -f $R/data-mix/samples.jsonl ] && return 0
    mkdir -p $R/data-mix && cp $R/data-tools/meta.json $R/data-mix/ &&
    cat $R/data-tools/samples.jsonl $(ls $R/data-broad/samples.jsonl $R/data-prev-*/samples.jsonl \
      2>/dev/null) > $R/data-mix/samples.jsonl && echo "mix: $(wc -l < $R/data-mix/samples.jsonl) samples"
  }
  for a in $ARMS; do case $a in today|broad|mix|wide|grow5|scratch4|scratch5) ;; *)
    echo "unknown arm $a: expected today, broad, mix, wide, grow5, scratch4 or scratch5" >&2; exit 2 ;; esac; done
  rm -rf $R/data-mix                    # built once per train step, for mix and wide alike
  failed=""
  score default "$D"; cp $R/evalset/samples.jsonl "$OUT/evalset-samples.jsonl" 2>/dev/null
  for a in $ARMS; do
    case $a in
    today) ts speculator train $common --data $R/data-tools --out $R/today --layers 4 \
             --init-from "$D" --lr 1.5e-4 --time-budget $T > $R/train-today.txt 2>&1 ;;
    broad) arm broad 4 "$D" 3e-4 1.5e-4 ;;
    # INIT=DIR: mix continues from that drafter (an earlier session's arm brought back) instead
    # of the default; the default stays the peer every arm is scored against
    mix) mixdata && ts speculator train $common --data $R/data-mix --out $R/mix --layers 4 \
           --init-from "${INIT:-$D}" --lr 1.5e-4 --time-budget $T > $R/train-mix.txt 2>&1 ;;
    wide) mixdata && ts speculator train $common --data $R/data-mix --out $R/wide --layers 4 \
            --intermediate-size ${WIDE:-3072} --init-from "${INIT:-$D}" --grow --lr 1.5e-4 \
            --time-budget $T > $R/train-wide.txt 2>&1 ;;
    grow5) ts speculator train $common --data $R/data-tools --out $R/grow5 --layers 5 \
             --init-from "$D" --grow-layers --lr 1.5e-4 --time-budget $T > $R/train-grow5.txt 2>&1 ;;
    scratch4) arm scratch4 4 "" 6e-4 3e-4 ;;
    scratch5) arm scratch5 5 "" 6e-4 3e-4 ;;
    esac
    if [ -f $R/$a/drafter/model.safetensors ]; then echo "$a trained after ${SECONDS}s"
      cp $R/$a/metrics.json "$OUT/metrics-$a.json" 2>/dev/null; score $a $R/$a/drafter
    else failed="$failed $a"; echo "ARM FAILED: $a (no $R/$a/drafter); its logs end:" >&2
      for f in $R/train-$a*.txt; do tail -n 3 "$f" | cut -c1-400 >&2; done; fi
  done
  tail -n 1 $R/train-*.txt
  tar czf "$OUT/broad-train.tgz" -C $R $(cd $R && ls tau-*.json train-*.txt eval-*.txt \
    */metrics.json evalset/samples.jsonl 2>/dev/null)   # the eval set's answers: per-turn tau
  [ -z "$failed" ] || { echo "arms that failed:$failed" >&2; exit 1; }
  ;;
bench)  # bench ARM: decode tok/s, one stream, the arm's drafter beside the default (--peer-speculator)
        # on N turns of each independent split, as the H200 serves (lookup, CUDA's branches);
        # PLANS=first,planned: each branch plan side by side (engine/local/branch_plan.py)
  a=${2:?usage: bash scripts/gpu/broad.sh bench ARM}
  ts bench spec --data $R/evalset --device ${DEV:-cuda} --speculator $R/$a/drafter --peer-speculator "$D" \
    --blocks 16 --policies always --n ${N:-24} ${PLANS:+--branch-plans $PLANS} --no-transformers \
    --json "$OUT/spec-$a-vs-default.json" 2>&1 |
    grep -v '^Loading'
  ;;
all)  # data-local, then train at once: no call between them, so no idle gap to lose the machine in
  bash scripts/gpu/broad.sh data-local && bash scripts/gpu/broad.sh train
  ;;
fetch)  # fetch ARM: that arm's exported drafter, its weights in 15 MB parts (a file comes back
        # only under 16 MiB): cat model.safetensors.part_* > model.safetensors here
  a=${2:?usage: bash scripts/gpu/broad.sh fetch ARM}
  cp $R/$a/drafter/*.json $R/$a/drafter/*.md "$OUT"/ 2>/dev/null
  split -b 15000000 $R/$a/drafter/model.safetensors "$OUT/model.safetensors.part_"
  sha256sum $R/$a/drafter/model.safetensors
  ;;
bg)  # bg STEP: run that step detached (setsid; on CPUS with taskset if set), so a call cut short
     # or a lost reply loses nothing; its files go to runs/broad/out-STEP, then STEP.done
  s=${2:?usage: bash scripts/gpu/broad.sh bg STEP}; rm -rf $R/out-$s $R/$s.done; mkdir -p $R/out-$s
  OUT=$R/out-$s setsid nohup ${CPUS:+taskset -c $CPUS} bash -c \
    "bash scripts/gpu/broad.sh $s; touch $R/$s.done" > $R/$s.log 2>&1 < /dev/null &
  echo "started $s (pid $!)"
  ;;
wait)  # wait STEP SECONDS: until STEP.done or SECONDS pass; then its log's tail and files to $OUT
  s=${2:?usage: bash scripts/gpu/broad.sh wait STEP SECONDS}; t0=$(date +%s)
  [ -f $R/$s.log ] || { echo "no $R/$s.log: a fresh machine, the step is gone" >&2; exit 3; }
  while [ ! -f $R/$s.done ] && [ $(( $(date +%s) - t0 )) -lt ${3:-500} ]; do sleep 5; done
  grep -v '^\s*$' $R/$s.log | tail -n 40
  for f in $R/magpie-*.txt $R/datagen-*.txt; do [ -f "$f" ] && echo "$f: $(tail -n 1 "$f" | cut -c1-160)"; done
  cp $R/out-$s/* "$OUT"/ 2>/dev/null
  [ -f $R/$s.done ] && echo "$s done" || echo "$s still running after $(( $(date +%s) - t0 )) s"
  ;;
*) echo "usage: bash scripts/gpu/broad.sh data|data-local|train|all|fetch ARM|bench ARM|bg STEP|wait STEP S" >&2; exit 2 ;;
esac
ls -la "$OUT"
