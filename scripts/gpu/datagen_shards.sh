#!/usr/bin/env bash
# Issue 32 item 4 against the embedded engine's six shards: the same prompts answered by six
# `speculator datagen --engine local --device cuda --shard I/6` processes sharing the GPU (the
# pipeline's way, one torch thread each), then by one `--engine sglang` process. After
# `bash scripts/gpu/sglang.sh unpack`:  bash scripts/gpu/datagen_shards.sh   (~3 min)
# Prints and writes $OUT/datagen-shards.json: samples, wall seconds from launch to the last
# process's end (engine loads included) and samples/s over that wall, for each side, and the
# sum of the shards' own samples/s (answering time only) beside SGLang's.
set -uo pipefail
source scripts/gpu/sglang_env.sh
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
R=runs/datagen-shards; N=${SHARDS:-6}
OUT=${OUT:-$R}; rm -rf "$R" && mkdir -p "$R" "$OUT"
P="--model $M ${PROMPTS:---tool-conversations 600 --heldout-conversations 60 --generic 120 --max-new-tokens 160} --no-progress"
t0=$(date +%s.%N)
for i in $(seq 0 $((N - 1))); do
  # shellcheck disable=SC2086  # P is a flag list
  python3 -m turnspec.cli.main speculator datagen $P --engine local --device cuda --threads 1 \
    --max-batch 256 --kv-memory-gb 12 --max-prefill-tokens 32768 --shard $i/$N \
    --out $R/local-$i > $R/local-$i.log 2>&1 &
done
wait; t1=$(date +%s.%N)
# shellcheck disable=SC2086
python3 -m turnspec.cli.main speculator datagen $P --engine sglang --out $R/sglang > $R/sglang.log 2>&1
t2=$(date +%s.%N)
python3 - "$R" "$OUT" "$N" "$t0" "$t1" "$t2" <<'PY'
import json, sys
from pathlib import Path
R, OUT, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
t0, t1, t2 = map(float, sys.argv[4:7])
def summary(name):
    lines = [l for l in (R / f"{name}.log").read_text(errors="replace").splitlines() if l.startswith('{"engine"')]
    return json.loads(lines[-1]) if lines else {"error": (R / f"{name}.log").read_text(errors="replace")[-1500:]}
def count(name):
    p = R / name / "samples.jsonl"
    return sum(1 for _ in p.open()) if p.is_file() else 0
local = [summary(f"local-{i}") for i in range(n)]
sgl = summary("sglang")
nl, ns = sum(count(f"local-{i}") for i in range(n)), count("sglang")
out = {"shards": n, "local_samples": nl, "local_wall_s": round(t1 - t0, 1),
       "local_samples_per_wall_s": round(nl / (t1 - t0), 1),
       "local_sum_of_shard_samples_per_s": round(sum(s.get("samples_per_s") or 0 for s in local), 1),
       "sglang_samples": ns, "sglang_wall_s": round(t2 - t1, 1),
       "sglang_samples_per_wall_s": round(ns / (t2 - t1), 1),
       "sglang_samples_per_s": sgl.get("samples_per_s"),
       "errors": [s["error"][-400:] for s in [*local, sgl] if "error" in s]}
out["sglang_over_six_shards"] = (round(out["sglang_samples_per_s"] / out["local_sum_of_shard_samples_per_s"], 2)
                                 if out["sglang_samples_per_s"] and out["local_sum_of_shard_samples_per_s"] else None)
(OUT / "datagen-shards.json").write_text(json.dumps({"local": local, "sglang": sgl, **out}, indent=1))
print(json.dumps(out))
PY
