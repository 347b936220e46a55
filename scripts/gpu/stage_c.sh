source scripts/gpu/env.sh
B=${TRAIN_BUDGET:-390}
common="--data runs/dflash-data --device cuda --batch-size 64 --anchors 48 --epochs 12 --time-budget $B --eval-every 500 --eval-samples 128 --log-every 100 --no-progress --final-eval-samples 256"
ts speculator train $common --out runs/dflash-smollm2 > runs/train-main.out 2>&1 &
ts speculator train $common --train-sources generic --out runs/dflash-generic > runs/train-generic.out 2>&1 &
wait
tail -4 runs/train-main.out runs/train-generic.out
repro_d="turnspec speculator datagen --device cuda --max-batch 256 --kv-memory-gb 40 --out runs/dflash-data --tool-conversations 2000 --heldout-conversations 200 --max-new-tokens 160 --batch-size 256 --time-budget 210"
repro_t="turnspec speculator train $common --out runs/dflash-smollm2"
ts speculator export --checkpoint runs/dflash-smollm2 --out runs/export/smollm2-dflash --reproduce "$repro_d" --reproduce "$repro_t"
ts speculator export --checkpoint runs/dflash-generic --out runs/export/smollm2-dflash-generic --reproduce "$repro_t --train-sources generic"
mkdir -p $OUT/smollm2-dflash && cp runs/export/smollm2-dflash/* $OUT/smollm2-dflash/
cp runs/dflash-smollm2/metrics.json $OUT/metrics-main.json; cp runs/dflash-generic/metrics.json $OUT/metrics-generic.json
cp runs/dflash-smollm2/train.log $OUT/train-main.log; cp runs/dflash-generic/train.log $OUT/train-generic.log
ls -la $OUT $OUT/smollm2-dflash
