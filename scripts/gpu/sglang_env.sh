# Sourced on the device before anything runs turnspec over SGLang: the carried wheels first on
# the path (sglang, its transformers and xgrammar, the server's grpc/otel/protobuf), then the
# repo as the `turnspec` package.
mkdir -p /tmp/ts && ln -sfn "$PWD" /tmp/ts/turnspec
# turnspec as an installed distribution for SGLang's plugin loader (its entry point; pyproject's
# [project.entry-points."sglang.srt.plugins"]), which reads installed metadata only
d=/tmp/ts/turnspec-0.1.0.dist-info; mkdir -p $d
printf 'Metadata-Version: 2.1\nName: turnspec\nVersion: 0.1.0\n' > $d/METADATA
printf '[sglang.srt.plugins]\nturnspec = turnspec.engine.sglang_plugin:register\n' > $d/entry_points.txt
export PYTHONPATH=/tmp/sgsite:/tmp/ts PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 \
  SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK=1 TOKENIZERS_PARALLELISM=false TRITON_INTERPRET=0
ts() { python3 -m turnspec.cli.main "$@"; }
source scripts/gpu/health.sh  # healthy, wait_healthy
# SGLang's own server as the plugin's measurements start it (profile_step.sh, plugin_load.sh),
# beside each script's memory, KV pool, port and speculation flags
SG_SERVER_FLAGS=(--attention-backend triton --sampling-backend pytorch --grammar-backend xgrammar
                 --dtype bfloat16 --cuda-graph-max-bs-decode 32 --enable-metrics --sleep-on-idle
                 --host 127.0.0.1)
