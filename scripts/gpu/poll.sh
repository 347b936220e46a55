# Wait up to $1 seconds for runs/$2 (default pipeline.done, written by pipeline.sh after the
# evals; bench.done after the GPU bench). Every 10 s, whatever pipeline.sh has finished
# under runs/out is copied to $OUT, so a call killed at the device's limit still brings back
# what was done (the 2026-11-30 sixth session lost a whole run to a poll that only copied at
# its end). Give $1 at least 90 s less than the device time left: the call's limit is shorter.
t0=$(date +%s); marker=runs/${2:-pipeline.done}
# A machine idle for 30 s is given back and the next call gets a fresh one: no pipeline to wait
# for (the seventh session polled an empty machine for 570 s after an interruption). Say so.
if [ ! -f runs/pipeline.log ]; then
  echo "no runs/pipeline.log: this is a fresh machine, the pipeline of call C is gone" >&2; exit 3
fi
# A call brings back at most 8 files (16 MiB each): the drafter's pieces and the packed
# completions travel as they are, everything else in one archive (run 10's call E copied 19
# loose files and got none of the evals back).
sync_out() {
  cp -u runs/out/model.safetensors.part_* runs/out/responses-*.jsonl.* "$OUT"/ 2>/dev/null
  tar czf "$OUT"/out.tgz.part -C runs/out --exclude='model.safetensors.part_*' \
    --exclude='responses-*' . 2>/dev/null && mv "$OUT"/out.tgz.part "$OUT"/out.tgz
  grep -v '^\s*$' runs/pipeline.log | tail -n 60 > "$OUT"/pipeline-tail.txt 2>/dev/null; true
}
while [ ! -f "$marker" ] && [ $(( $(date +%s) - t0 )) -lt "${1:-520}" ]; do sync_out; sleep 10; done
sync_out
grep -v '^\s*$' runs/pipeline.log | tail -n 40
# the datagen shards and the carried-seed rebuilds, one line each: where the pipeline waits
# (run 15's first try spent a separate call on this, then lost the machine to a pause)
for f in runs/datagen-s*.out runs/unpack-*.out; do [ -f "$f" ] && echo "$f: $(tail -n 1 "$f" | cut -c1-200)"; done
for f in runs/train-main.out runs/train-soft.out runs/train-generic.out; do [ -f "$f" ] && tr '\r' '\n' < "$f" | grep -v '^\s*$' | tail -n 3; done
tar tzvf "$OUT"/out.tgz 2>/dev/null | awk '{print $3, $6}'; ls -la "$OUT"
[ -f "$marker" ] || echo "still running: no $marker yet"
true
