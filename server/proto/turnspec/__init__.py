"""turnspec.server.proto.turnspec."""
