# Call A (carry .gpu-carry/g1 + .gpu-carry/wheels): wheels, versions, the CUDA tests (engine,
# speculator, and no Triton compile after the warm-up).
source scripts/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch,triton,transformers,gguf;print('torch',torch.__version__,'triton',triton.__version__,'transformers',transformers.__version__)"
# The host's per-thread Python speed, idle: its datagen renders and rebuilds took 4.5-8x the
# dev box's time under load (run 22); this loop takes 0.42 s on the dev box (python 3.11).
lscpu | grep -E 'Model name|^CPU\(s\)|Thread\(s\)|Core\(s\)|MHz' || true
python3 -c "import sys,time;t=time.perf_counter();sum(i*i for i in range(10**7));print(sys.version.split()[0],'sum-of-squares 1e7:',round(time.perf_counter()-t,2),'s')"
# CUDA_TESTS=0 skips them (a session that changed no CUDA path and needs the device time).
if [ "${CUDA_TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -p no:cacheprovider --tb=long tests/speculator/test_cuda.py tests/speculator/test_train_step.py tests/kernels/test_warmup.py -k cuda > $OUT/test_cuda.txt 2>&1 || true
  tail -c 6000 $OUT/test_cuda.txt
fi
