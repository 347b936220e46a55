"""How many variants of turnspec's Triton kernels this process has compiled.

A Triton kernel compiles once per new specialisation (constexpr values, and the divisibility of
integer arguments it is allowed to specialise on). On the H200 one compile costs about a second,
so a compile inside a request is a latency spike, and inside a benchmark it lands on whichever
configuration meets the new shape first. Benchmarks read this count around their timed pass.
"""

from __future__ import annotations


def _kernels() -> list:
    from turnspec.kernels import dflash_accept, paged_attention

    return [paged_attention._paged_attention_kernel,
            paged_attention._paged_attention_combine_kernel,
            dflash_accept._dflash_accept_kernel]


def compiled_variants() -> int | None:
    """Compiled variants over every device, or None where kernels are interpreted
    (TRITON_INTERPRET=1: nothing is compiled, so there is nothing to count)."""
    total, counted = 0, False
    for fn in _kernels():
        caches = getattr(fn, "device_caches", None)
        if caches is None:
            continue
        counted = True
        total += sum(len(entry[0]) for entry in caches.values())
    return total if counted else None
