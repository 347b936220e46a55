"""turnspec.server.proto."""
