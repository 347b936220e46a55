"""`turnspec bench stress` / `turnspec bench soak`: the reliability campaign of
docs/reliability.md against a live `turnspec serve` (fuzzer, disconnect storm, 3x overload,
bounded soak)."""
