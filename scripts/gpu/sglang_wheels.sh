#!/usr/bin/env bash
# The wheels that run SGLang 0.5.17 (the newest release built for torch 2.11, which the lent H200
# has) with DFLASH on one Hopper GPU, plus what `turnspec serve` needs there and the image lacks,
# trimmed so they travel in device calls. Run on a dev machine (PyPI reachable), repo root:
#   bash scripts/gpu/sglang_wheels.sh        -> .gpu-carry/sgl1 (~58 MiB), .gpu-carry/sgl2 (~54 MiB)
# scripts/gpu/sglang.sh packs them with the model and the drafter; its `unpack` installs them
# on the device into /tmp/sgsite (pip --target, no index, no deps) and writes the IPython stub
# sglang imports. Trimmed: sglang-kernel without the FA3 kernels (flash_ops, 1.1 GB: serve with
# attention_backend "triton") and the sm100, flashmla and infllm shared objects (their Python
# modules stay: sgl_kernel imports them at start). Pinned beside sglang:
# - transformers 5.12.1 + tokenizers 0.22.2: sglang 0.5.17 fails to import under the image's
#   transformers 5.17 ("'qwen3_asr' is already used by a Transformers config");
# - xgrammar 0.2.9 instead of sglang's 0.2.1: our server compiles tool grammars with 0.2.9, whose
#   EBNF (JSON-schema `pattern`s as Regex rules) 0.2.1 cannot parse; sglang uses only the
#   GrammarCompiler / GrammarMatcher / StructuralTag API both versions share;
# - the server's own needs the image lacks: grpc health + reflection, protobuf 6 (our generated
#   stubs, and the grpcio they were generated for), the OpenTelemetry SDK and OTLP/gRPC exporter,
#   pytest-asyncio for the GPU tests;
# - what `python -m sglang.launch_server` (SGLang's own server, the peer in the benchmark) imports
#   and the image lacks: jsonschema (+ its three), python-multipart. Its realtime-audio routes
#   import soundfile, which `sglang.sh unpack` stubs (audio is never served here);
# - sglang-router (30 MiB), for the router demo (scripts/gpu/router_demo.sh).
set -euo pipefail
out=.gpu-carry; mkdir -p "$out/dl" "$out/sgl1" "$out/sgl2"
grep -qx '/.gpu-carry/' .git/info/exclude 2>/dev/null || echo '/.gpu-carry/' >> .git/info/exclude
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_26_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d "$out/dl" "$@"; }
trim() {  # trim WHEEL OUT REGEX: the wheel without the files REGEX matches, RECORD rewritten
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys, zipfile
src, dst, pat = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
zin, zout = zipfile.ZipFile(src), zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=9)
for info in zin.infolist():
    if pat.search(info.filename):
        continue
    data = zin.read(info.filename)
    if info.filename.endswith(".dist-info/RECORD"):
        keep = [line for line in data.decode().splitlines() if not pat.search(line.split(",")[0])]
        data = ("\n".join(keep) + "\n").encode()
    zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
zout.close()
PY
}
SGL1="sglang==0.5.17 flashinfer-python==0.6.15.post1 apache-tvm-ffi==0.1.11 pydantic==2.12.5
 pydantic-core==2.41.5 openai==2.6.1 pyzmq==27.3.0 jiter==0.19.0 compressed-tensors==0.20.1
 msgspec==0.23.0 orjson==3.13.0 dill==0.4.1 gguf==0.19.0 fastapi==0.128.0 pybase64==1.5.1
 uvicorn==0.55.0 starlette==0.50.0 loguru==0.7.3 typing-extensions==4.16.0 setproctitle==1.3.8
 distro==1.9.0 typing-inspection==0.4.5 annotated-types==0.8.0 partial-json-parser==0.2.1.1.post7 sniffio==1.3.1"
SGL2="transformers==5.12.1 tokenizers==0.22.2 xgrammar==0.2.9 protobuf==6.33.6 grpcio==1.85.3
 jsonschema==4.25.1 jsonschema-specifications==2025.9.1 referencing==0.36.2 rpds-py==0.27.1
 python-multipart==0.0.20 sglang-router==0.3.2
 grpcio-health-checking==1.81.1 grpcio-reflection==1.81.1 opentelemetry-api==1.45.2
 opentelemetry-sdk==1.45.2 opentelemetry-semantic-conventions==0.66b2 opentelemetry-proto==1.45.2
 opentelemetry-exporter-otlp-proto-grpc==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2
 opentelemetry-exporter-otlp-common==0.66b2 googleapis-common-protos==1.76.0 pytest-asyncio==1.5.0"
rm -f "$out"/dl/*.whl "$out"/sgl1/*.whl "$out"/sgl2/*.whl
for w in $SGL1; do dl "$w"; done
mv "$out"/dl/*.whl "$out/sgl1/"
dl sglang-kernel==0.4.5
trim "$out"/dl/sglang_kernel-0.4.5-*.whl "$out/sgl1/$(basename "$out"/dl/sglang_kernel-0.4.5-*.whl)" \
  '(flash_ops|/sm100/|flashmla|infllm)[^/]*\.so$'
rm -f "$out"/dl/*.whl
for w in $SGL2; do dl "$w"; done
mv "$out"/dl/*.whl "$out/sgl2/"
rm -rf "$out/dl"
du -sh "$out/sgl1" "$out/sgl2"
