"""Package marker: gives these tests unique module names (speculator.test_config, ...)."""
