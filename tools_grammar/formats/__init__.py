"""turnspec.tools_grammar.formats."""
