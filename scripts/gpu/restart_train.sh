# Cut the running pipeline at its next training checkpoint and restart it with SKIP_DATAGEN=1 on
# a new TRAIN_BUDGET (training resumes from runs/dflash-smollm2/checkpoint.pt; the cosine refits
# to the new budget). For a run whose first budget no longer fits the device time left.
source scripts/gpu/env.sh
set +e
ck=runs/dflash-smollm2/checkpoint.pt; t0=$(date +%s)
while [ ! -f "$ck" ] && [ $(( $(date +%s) - t0 )) -lt "${WAIT_S:-400}" ]; do sleep 2; done
s1=-1; s2=$(stat -c %s "$ck"); while [ "$s1" != "$s2" ]; do sleep 2; s1=$s2; s2=$(stat -c %s "$ck"); done
pkill -f scripts/gpu/pipeline.sh; pkill -f "speculator train"; sleep 3
grep -h '"step"' runs/dflash-smollm2/train.log | tail -n 2
rm -f runs/pipeline.done
SKIP_DATAGEN=1 setsid nohup bash scripts/gpu/pipeline.sh >> runs/pipeline.log 2>&1 < /dev/null &
bash scripts/gpu/poll.sh ${POLL_S:-240}
