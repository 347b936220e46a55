"""Server test fixtures: the session's one SmolLM2 engine (`local_engine`, tests/conftest.py) is
shared by per-module servers, each with its own config (srv_helpers.start_server)."""
