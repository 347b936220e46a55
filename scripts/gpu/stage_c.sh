# Call C (carry .gpu-carry/g3): reassemble + prepare SmolLM2, then start the whole pipeline in
# its own process session (it outlives this call; later calls run poll.sh) and poll.
source scripts/gpu/env.sh
# The GGUF's pieces, in order (g1/x_aa, g2/x_ab, ...; the last, small one rides with call B2).
cat .gpu-carry/g*/x_* > /tmp/smollm2.gguf
sha256sum /tmp/smollm2.gguf | cut -c1-16
ts models prepare --gguf /tmp/smollm2.gguf 2>&1 | tail -1
mkdir -p runs && rm -f runs/pipeline.done
setsid nohup bash scripts/gpu/pipeline.sh > runs/pipeline.log 2>&1 < /dev/null &
bash scripts/gpu/poll.sh ${POLL_S:-520}
