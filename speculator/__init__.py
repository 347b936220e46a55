"""turnspec.speculator."""
