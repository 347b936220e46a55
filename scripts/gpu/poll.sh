# Wait up to $1 seconds for runs/$2 (default pipeline.done, written by pipeline.sh once results
# are packed; bench.done after the GPU bench), then copy runs/out to $OUT.
t0=$(date +%s); marker=runs/${2:-pipeline.done}
while [ ! -f "$marker" ] && [ $(( $(date +%s) - t0 )) -lt "${1:-520}" ]; do sleep 10; done
grep -v '^\s*$' runs/pipeline.log | tail -n 40
for f in runs/train-main.out runs/train-generic.out; do [ -f "$f" ] && tr '\r' '\n' < "$f" | grep -v '^\s*$' | tail -n 3; done
if [ -f "$marker" ]; then cp runs/out/* "$OUT"/ 2>/dev/null; ls -la "$OUT"; else echo "still running: no $marker yet"; fi
true
