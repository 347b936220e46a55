"""turnspec.engine.local."""
