"""turnspec.engine."""
