"""The host a benchmark ran on, for its JSON record."""

from __future__ import annotations

import platform


def cpu_name() -> str:
    """The host CPU's model name for benchmark records ("AMD EPYC ..."); platform.processor()
    is empty on Linux, so /proc/cpuinfo first, then the machine type."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
