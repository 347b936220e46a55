source scripts/gpu/env.sh
cat .gpu-carry/part1/part_aa .gpu-carry/part2/part_ab > /tmp/smollm2.gguf
sha256sum /tmp/smollm2.gguf | cut -c1-16
ts models prepare --gguf /tmp/smollm2.gguf 2>&1 | tail -1
ts speculator datagen --device cuda --max-batch 256 --kv-memory-gb 40 --out runs/dflash-data \
  --tool-conversations 2000 --heldout-conversations 200 --max-new-tokens 160 \
  --batch-size 256 --time-budget ${DATAGEN_BUDGET:-210} --no-progress 2>&1 | tail -3
cp runs/dflash-data/meta.json $OUT/ 2>/dev/null || true
gzip -c runs/dflash-data/samples.jsonl > $OUT/samples.jsonl.gz
ls -la $OUT
