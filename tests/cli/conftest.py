"""The speculator commands' tests use the tiny target and data of tests/speculator."""

from tests.speculator.conftest import one_thread, tiny_data, tiny_target_dir

__all__ = ["one_thread", "tiny_data", "tiny_target_dir"]
