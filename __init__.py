"""turnspec: the fastest open LLM backend for voice agents."""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# The checkout's root is this package, so its folders (kernels/, server/, cli/, ...) are also
# importable as top-level modules whenever the root is on sys.path: `python -m` and pytest put
# the working directory first. transformers >= 5.25 depends on PyPI's `kernels` and imports it
# with its modeling code; from the root, `import kernels` found kernels/ instead and failed
# ("cannot import name 'CUDAProperties' from 'kernels'"). Installed packages go first; the root
# stays last, for what only it holds (the tests' `tests.*` helpers).
_ROOT = _os.path.dirname(_os.path.realpath(__file__))   # real: /tmp/ts/turnspec links here on the GPU


def _is_root(entry: str) -> bool:
    """Whether a sys.path entry ('' is the working directory) is the checkout's root."""
    return _os.path.realpath(entry or _os.curdir) == _ROOT


_AT_ROOT = [p for p in _sys.path if _is_root(p)]
if _AT_ROOT:
    _sys.path[:] = [p for p in _sys.path if p not in _AT_ROOT] + _AT_ROOT
