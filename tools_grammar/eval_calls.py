"""Moved: the tool-call validity bench is `turnspec bench tool-calls select|score` and
`turnspec bench tools` (turnspec/benchmarks/tool_calls.py)."""

import sys

if __name__ == "__main__":
    sys.exit("python -m turnspec.tools_grammar.eval_calls moved: run `turnspec bench tool-calls "
             "select|score` (same flags)")
