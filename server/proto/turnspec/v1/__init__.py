"""turnspec.server.proto.turnspec.v1."""
