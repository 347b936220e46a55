"""workloads/ imports only tools_grammar and itself, and no module reaches into another's private
names (what the domain modules used to do with `_flight` and `_verify`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "workloads"
ALLOWED = ("turnspec.workloads", "turnspec.tools_grammar")  # the layers at or below workloads


def _sources() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "tests" / "workloads").rglob("*.py"))
    assert len(files) > 20, f"expected the workloads package under {PACKAGE}"
    return files


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("turnspec"):
            found += [f"{path.name}:{node.lineno} imports {node.module}.{a.name}" for a in node.names if _private(a.name)]
            modules |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("turnspec")}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and _private(node.attr)):
            found.append(f"{path.name}:{node.lineno} uses {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_from_another_module(path: Path) -> None:
    assert _violations(path) == [], "a name shared between modules must be public (no leading underscore)"


def test_workloads_import_only_tools_grammar_and_themselves() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {name}" for name in names
                    if name.startswith("turnspec") and not name.startswith(ALLOWED)]
    assert bad == [], f"workloads/ may import only {ALLOWED} (layer order: tools_grammar < workloads)"
