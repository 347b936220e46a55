"""turnspec.speculator: the offline DFlash pipeline — training data from the target, training,
tau evaluation, export. The drafter network and its folder format are the engine's
(`turnspec.engine.drafter`), since the engine runs it."""
