# Sourced at the start of every device call (the GPU machine's own python3, torch 2.11).
# Carried wheels (gguf) go to /tmp/site; `turnspec` is importable through a symlink.
set -e
if [ -d .gpu-carry/wheels ] && [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .gpu-carry/wheels/*.whl && touch /tmp/site/.done
fi
mkdir -p /tmp/ts && ln -sfn "$PWD" /tmp/ts/turnspec
export PYTHONPATH=/tmp/site:/tmp/ts PYTHONUNBUFFERED=1 TRITON_INTERPRET=0 TOKENIZERS_PARALLELISM=false
ts() { python3 -m turnspec.cli.main "$@"; }
