#!/usr/bin/env bash
# Issue 32 item 4 on the H200: one prompt shard answered by `speculator datagen --engine local
# --device cuda` and then by `--engine sglang` (SGLang's in-process batch engine), in one call:
#   bash scripts/gpu/datagen_sglang.sh        # after `bash scripts/gpu/sglang.sh unpack`
# 614 prompts (shard 0/6 of 600 + 60 held-out calls and 120 generic prompts), 160 new tokens;
# two engine loads, ~3 min. Each half's summary goes to $OUT/datagen-{local,sglang}.json (an
# {"error": ...} there if it failed; the other half runs anyway), then one comparison line:
# samples/s of each, their ratio, and the share of answers token-identical (both bf16, but
# different kernels round differently, so some greedy answers part ways; the prompts must all
# match). Logs and both data folders stay in runs/datagen-sglang. PROMPTS (the prompt flags),
# LOCAL (the local engine's) and SGLANG (more flags for the SGLang half) override the defaults.
set -uo pipefail
source scripts/gpu/sglang_env.sh
M=$(python3 -m turnspec.cli.main models prepare 2>/dev/null | tail -n 1)
R=runs/datagen-sglang
OUT=${OUT:-$R}
rm -rf "$R" && mkdir -p "$R" "$OUT"
PROMPTS="--model $M ${PROMPTS:---tool-conversations 600 --heldout-conversations 60 --generic 120
  --shard 0/6 --max-new-tokens 160} --batch-size 1024 --no-progress"
LOCAL=${LOCAL:---device cuda --max-batch 512 --kv-memory-gb 20 --max-prefill-tokens 32768}
half() {  # half NAME FLAGS...: one datagen into $R/NAME; its summary (last JSON line) to $OUT
  local name=$1; shift
  # shellcheck disable=SC2086  # PROMPTS is a flag list
  timeout -k 10 "${HALF_S:-200}" python3 -m turnspec.cli.main speculator datagen $PROMPTS \
    --out "$R/$name" "$@" > "$R/$name.log" 2>&1
  local rc=$?
  grep '^{"engine"' "$R/$name.log" | tail -n 1 > "$OUT/datagen-$name.json"
  if [ "$rc" = 0 ] && [ -s "$OUT/datagen-$name.json" ]; then
    echo "$name: $(cat "$OUT/datagen-$name.json")"
  else
    echo "$name FAILED (exit $rc), last lines of $R/$name.log:"; tail -n 25 "$R/$name.log"
    python3 -c 'import json, sys; print(json.dumps({"engine": sys.argv[1],
      "error": f"exit {sys.argv[2]}",
      "log_tail": open(sys.argv[3], errors="replace").read()[-3000:]}))' \
      "$name" "$rc" "$R/$name.log" > "$OUT/datagen-$name.json"
  fi
}
# shellcheck disable=SC2086  # LOCAL is a flag list
half local --engine local $LOCAL
half sglang --engine sglang ${SGLANG:-}
python3 - "$R" "$OUT" <<'EOF'
import json, sys
from pathlib import Path

R, OUT = Path(sys.argv[1]), Path(sys.argv[2])
summ = {n: json.loads((OUT / f"datagen-{n}.json").read_text() or "{}") for n in ("local", "sglang")}

def rows(name):
    path = R / name / "samples.jsonl"
    return {r["id"]: r for r in map(json.loads, path.open())} if path.is_file() else {}

def meta_keys(name):
    path = R / name / "meta.json"
    return sorted(json.loads(path.read_text())) if path.is_file() else None

def split(r):  # (prompt, completion) of a record
    n = r["loss_mask"].index(1) if 1 in r["loss_mask"] else len(r["loss_mask"])
    return r["input_ids"][:n], r["input_ids"][n:]

a, b = rows("local"), rows("sglang")
common = sorted(set(a) & set(b))
same_prompt = [i for i in common if split(a[i])[0] == split(b[i])[0]]
identical = [i for i in same_prompt if a[i]["input_ids"] == b[i]["input_ids"]]
first_diff = sorted(next((k for k, (x, y) in enumerate(zip(split(a[i])[1], split(b[i])[1]))
                          if x != y), min(len(split(a[i])[1]), len(split(b[i])[1])))
                    for i in same_prompt if i not in identical)
keys = {n: meta_keys(n) for n in ("local", "sglang")}
rate = {n: s.get("samples_per_s") for n, s in summ.items()}
out = {"local_samples_per_s": rate["local"], "sglang_samples_per_s": rate["sglang"],
       "sglang_over_local": round(rate["sglang"] / rate["local"], 2)
       if rate["local"] and rate["sglang"] else None,
       "local_tokens_per_s": summ["local"].get("tokens_per_s"),
       "sglang_tokens_per_s": summ["sglang"].get("tokens_per_s"),
       "engine_load_s": {n: s.get("engine_load_s") for n, s in summ.items()},
       "written": {"local": len(a), "sglang": len(b)}, "both": len(common),
       "same_prompt": len(same_prompt), "token_identical": len(identical),
       "identical_frac": round(len(identical) / len(common), 3) if common else None,
       "median_first_diff_token": first_diff[len(first_diff) // 2] if first_diff else None,
       "meta_keys_equal": keys["local"] is not None and keys["local"] == keys["sglang"],
       "errors": {n: s["error"] for n, s in summ.items() if "error" in s}}
(OUT / "datagen-compare.json").write_text(json.dumps(out, indent=1))
print(f"compare: local {rate['local']} samples/s, sglang {rate['sglang']} samples/s, "
      f"sglang/local {out['sglang_over_local']}x; token-identical {len(identical)}/{len(common)} "
      f"({out['identical_frac']}); prompts equal {len(same_prompt)}/{len(common)}; "
      f"median first differing answer token {out['median_first_diff_token']}; "
      f"meta keys equal {out['meta_keys_equal']}; errors {out['errors'] or 'none'}")
EOF
ls -la "$OUT"
