"""turnspec.tools_grammar.workloads."""
