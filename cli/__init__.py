"""turnspec.cli: the one `turnspec` entry point, a thin module per command group."""
