# Sourced on the device before anything runs turnspec over SGLang: the carried wheels first on
# the path (sglang, its transformers and xgrammar, the server's grpc/otel/protobuf), then the
# repo as the `turnspec` package.
mkdir -p /tmp/ts && ln -sfn "$PWD" /tmp/ts/turnspec
export PYTHONPATH=/tmp/sgsite:/tmp/ts PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 \
  SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK=1 TOKENIZERS_PARALLELISM=false TRITON_INTERPRET=0
ts() { python3 -m turnspec.cli.main "$@"; }
