"""Run from the checkout's root (`python -m`, `python -c`, pytest), the root's folders must not
shadow installed packages of the same name: transformers >= 5.25 imports PyPI's `kernels`, and
kernels/ sits in the root. Importing turnspec puts the root after the installed packages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import turnspec

ROOT = Path(turnspec.__file__).resolve().parent


def test_the_root_goes_after_installed_packages() -> None:
    code = ("import json, sys; before = list(sys.path); import turnspec; "
            "print(json.dumps([before, sys.path]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    before, after = json.loads(out.stdout)
    assert before[0] == "", before               # python -c put the working directory first
    assert after[-1] == "" and "" not in after[:-1], after
    site = [i for i, p in enumerate(after) if p.endswith("site-packages")]
    assert site and max(site) < after.index(""), after
