"""turnspec.engine.model."""
