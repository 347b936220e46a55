"""Moved: the grammar mask bench is `turnspec bench mask` (turnspec/benchmarks/mask.py)."""

import sys

if __name__ == "__main__":
    sys.exit("python -m turnspec.tools_grammar.bench_mask moved: run `turnspec bench mask` "
             "(same flags; --model-dir is now --model)")
