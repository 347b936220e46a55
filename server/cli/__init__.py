"""turnspec.server.cli."""
