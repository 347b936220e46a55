"""turnspec.server.transports."""
