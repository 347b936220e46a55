# The drafter campaign in one go (started by stage_c.sh with setsid): datagen -> train the
# tool+generic drafter and a generic-only drafter with the same budget, in parallel -> export ->
# tau per split -> bench spec. Results are packed under runs/out (poll.sh copies them back).
source scripts/gpu/env.sh
set +e -x
DG=${DATAGEN_BUDGET:-300}; TB=${TRAIN_BUDGET:-780}; L=${LAYERS:-4}
mkdir -p runs/out
datagen="--device cuda --out runs/dflash-data --tool-conversations 5000 --heldout-conversations 200 --max-new-tokens 160 --time-budget $DG --no-progress"
ts speculator datagen $datagen --max-batch 512 --kv-memory-gb 60 --batch-size 1024 \
  || ts speculator datagen $datagen --max-batch 256 --kv-memory-gb 40 --batch-size 256
python3 - <<'PY'
import json
with open("runs/dflash-data/samples.jsonl") as f, open("runs/out/heldout-all.jsonl", "w") as o:
    for line in f:
        if json.loads(line)["split"] == "heldout":
            o.write(line)
PY
common="--data runs/dflash-data --device cuda --layers $L --batch-size 64 --anchors 64 --epochs 200 --time-budget $TB --eval-every 1500 --eval-samples 128 --log-every 100 --no-progress --final-eval-samples 256"
ts speculator train $common --out runs/dflash-smollm2 > runs/train-main.out 2>&1 &
ts speculator train $common --train-sources generic --out runs/dflash-generic > runs/train-generic.out 2>&1 &
wait
repro_d="turnspec speculator datagen $datagen --max-batch 512 --kv-memory-gb 60 --batch-size 1024"
repro_t="turnspec speculator train $common --out runs/dflash-smollm2"
ts speculator export --checkpoint runs/dflash-smollm2 --out runs/export/smollm2-dflash --reproduce "$repro_d" --reproduce "$repro_t"
ts speculator export --checkpoint runs/dflash-generic --out runs/export/smollm2-dflash-generic --reproduce "$repro_t --train-sources generic"
D=runs/export/smollm2-dflash; G=runs/export/smollm2-dflash-generic
ts speculator eval --data runs/dflash-data --drafter $D --device cuda --block-size 16 --with-train --json runs/out/tau_main_b16.json
ts speculator eval --data runs/dflash-data --drafter $G --device cuda --block-size 16 --json runs/out/tau_generic_b16.json
ts speculator eval --data runs/dflash-data --drafter $D --device cuda --block-size 8 --json runs/out/tau_main_b8.json
split -b 15000000 $D/model.safetensors runs/out/model.safetensors.part_
cp runs/dflash-data/meta.json runs/out/datagen-meta.json
cp runs/dflash-smollm2/metrics.json runs/out/metrics-main.json; cp runs/dflash-generic/metrics.json runs/out/metrics-generic.json
cp runs/dflash-smollm2/train.log runs/out/train-main.log; cp runs/dflash-generic/train.log runs/out/train-generic.log
cp $D/config.json runs/out/config.json; cp $D/README.md runs/out/card.md
(cd runs/out && tar czf ../results.tgz --exclude='model.safetensors.part_*' . && rm -f *.json *.log *.md *.jsonl && mv ../results.tgz .)
touch runs/pipeline.done
ts bench spec --data runs/dflash-data --device cuda --speculator $D --blocks 4,8,16 --n 16 --json runs/out/bench_spec_gpu.json
touch runs/bench.done
