"""turnspec.loadtest."""
