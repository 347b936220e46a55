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
# healthy PORT: the server on 127.0.0.1:PORT answers /health with 200
healthy() { python3 -c "import sys,urllib.request as u; sys.exit(u.urlopen('http://127.0.0.1:$1/health', timeout=2).status != 200)" 2>/dev/null; }
# wait_healthy PORT PID LOG [TRIES]: poll every 0.5 s, TRIES times (400), until healthy (0); if
# PID exits first, LOG's tail and 1
wait_healthy() {
  for _ in $(seq "${4:-400}"); do
    healthy "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "server on port $1 died"; tail -n 30 "$3"; return 1; }
    sleep 0.5
  done; echo "server on port $1 not up"; return 1
}
