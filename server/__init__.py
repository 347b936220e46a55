"""turnspec.server."""
