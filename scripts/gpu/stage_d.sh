source scripts/gpu/env.sh
D=runs/export/smollm2-dflash; G=runs/export/smollm2-dflash-generic
for b in 16 8; do
  ts speculator eval --data runs/dflash-data --drafter $D --device cuda --block-size $b --json $OUT/tau_main_b$b.json 2>&1 | tail -2
  ts speculator eval --data runs/dflash-data --drafter $G --device cuda --block-size $b --json $OUT/tau_generic_b$b.json 2>&1 | tail -2
done
ts bench spec --data runs/dflash-data --device cuda --speculator $D --blocks 4,8,16 --n 16 --json $OUT/bench_spec_gpu.json 2>&1 | tail -24
ts bench engine --device cuda --prompts 8 --json $OUT/bench_engine_gpu.json 2>&1 | tail -22
