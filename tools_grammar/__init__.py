"""turnspec.tools_grammar."""
