#!/usr/bin/env bash
# Where a server's processes spend a load test: py-spy samples every process of each running
# plugin_load.sh server (its process group leader and children: turnspec's or SGLang's HTTP
# process, the scheduler, the detokenizer) while a command runs, without pausing them.
#   bash scripts/gpu/pyspy_servers.sh WHEEL_DIR -- COMMAND...
# WHEEL_DIR holds the py-spy wheel (carried: nothing is installed from a registry on the device).
# Writes $OUT/pyspy-NAME.txt per server: collapsed stacks (`py-spy record --format raw`, one line
# a stack, its sample count last, the pid in each stack's root), summarised here by
# scripts/gpu/pyspy_top.py. Servers: SERVERS (as plugin_load.sh), their pids in runs/plugin-load.
set -uo pipefail
W=${1:?pyspy_servers.sh WHEEL_DIR -- COMMAND...}; shift; [ "${1:-}" = -- ] && shift
P=/tmp/pyspy; [ -x $P/bin/py-spy ] || { python3 -m zipfile -e "$W"/py_spy-*.whl $P.x &&
  mkdir -p $P/bin && cp $P.x/py_spy-*.data/scripts/py-spy $P/bin/ && chmod +x $P/bin/py-spy; }
R=runs/plugin-load; pids=()
for n in ${SERVERS:?}; do
  $P/bin/py-spy record --subprocesses --threads --nonblocking --format raw --rate 200 \
    --pid "$(cat $R/$n.pid)" --output "$OUT/pyspy-$n.txt" > "$OUT/pyspy-$n.log" 2>&1 &
  pids+=($!)
done
"$@"; rc=$?
kill -INT "${pids[@]}" 2>/dev/null; wait "${pids[@]}"
tail -n 3 "$OUT"/pyspy-*.log
exit $rc
