source scripts/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch,triton,transformers,gguf;print('torch',torch.__version__,'triton',triton.__version__,'transformers',transformers.__version__)"
python3 -m pytest -q -p no:cacheprovider tests/speculator/test_cuda.py 2>&1 | tail -3
