# Call C (carry the last piece): reassemble + prepare SmolLM2, then start the whole pipeline in
# its own process session (it outlives this call; later calls run poll.sh) and poll.
source scripts/gpu/env.sh
# The pieces, in order (g1/x_0, g2/x_1, ...; the last rides with this call). BULK=1: they are
# scripts/gpu/bulk.sh's tar of the GGUF, the committed drafter and the completions, unpacked
# under .gpu-carry/bulk/ (pipeline.sh reads BULK_DIR); otherwise the GGUF alone (pieces.sh).
if [ "${BULK:-0}" = 1 ]; then
  bash scripts/gpu/bulk.sh unpack
  gguf=.gpu-carry/bulk/smollm2.gguf; export BULK_DIR=.gpu-carry/bulk
else
  cat .gpu-carry/g*/x_* > /tmp/smollm2.gguf; gguf=/tmp/smollm2.gguf
fi
sha256sum $gguf | cut -c1-16                                   # b179c9523d0e6a0f
ts models prepare --gguf $gguf 2>&1 | tail -1
mkdir -p runs && rm -f runs/pipeline.done
setsid nohup bash scripts/gpu/pipeline.sh > runs/pipeline.log 2>&1 < /dev/null &
bash scripts/gpu/poll.sh ${POLL_S:-520}
