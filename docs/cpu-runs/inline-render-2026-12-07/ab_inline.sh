#!/usr/bin/env bash
# A/B of the inline threshold: fake engine, voice WS, c=1 and c=16; -1 = always a thread, 512, 1e9 = always inline
cd /work/main
M=/root/.cache/turnspec/models/SmolLM2-135M-Instruct
for round in 1 2; do
for lim in -1 512 1000000000; do
  setsid .venv/bin/python -c "import sys, turnspec.server.render as s; s.INLINE_TOKENIZE_CHARS = $lim; from turnspec.cli.main import main; sys.exit(main(['serve','--engine','fake-fixed-rate','--fake-first-token-ms','10','--fake-interval-ms','4.5','--fake-tokens','50','--model','$M','--port','18102','--grpc-port','-1']))" > /tmp/abi-$lim.log 2>&1 &
  pid=$!
  for i in $(seq 60); do grep -q "ready" /tmp/abi-$lim.log && break; sleep 0.5; done
  .venv/bin/turnspec loadtest --url ws://127.0.0.1:18102/v1/responses --workload speculator/eval/voice.jsonl --tool-mode grammar --sweep 1,16 --duration 20 --warmup 2 --no-progress --history '' --max-tokens 96 --resend-history --out /tmp/abi-$lim-$round.json > /tmp/abi-$lim-$round.txt 2>&1
  kill -TERM -- -$pid 2>/dev/null; sleep 2; kill -KILL -- -$pid 2>/dev/null
  echo "== limit $lim round $round"; grep -E "output tok/s|^server host overhead|^  template|^E2E residual|^TTFT " /tmp/abi-$lim-$round.txt
done; done
