"""The layer order of docs/architecture.md, checked on every import in the tree:

    kernels < tools_grammar < workloads < engine < speculator < server < loadtest < benchmarks < cli

A package imports only itself and the packages before it; `loadtest` speaks to servers through
the public wire contracts only (`server/proto`), never server internals or the engine. Nothing
imports a private (underscore) name from another module. `scripts/` may import any package.
The speculation core (`engine/spec/`) imports no engine: only itself and `kernels`, so every
engine (the embedded one, the SGLang plugin) and the offline replay can call it.

No product module imports `turnspec.benchmarks`. Product is every package but `benchmarks`
itself and `scripts/`; `cli/` is product too (`turnspec serve` must run without the benches),
except the modules that only wire benchmark commands: `cli/bench.py` (`turnspec bench ...`) and
`cli/simulate.py` (`turnspec simulate`, whose model lives in `benchmarks/simulate*.py`), and
`cli/workload.py` for `turnspec workload render` alone (the same-tokens bench's input,
`benchmarks/same_tokens.py`, imported inside that command). The
layer order already keeps every package below `benchmarks` from importing it; this rule adds
`cli/` beyond those two files. An engine the server can run, even a fake one, lives in `engine/`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ("kernels", "tools_grammar", "workloads", "engine", "speculator", "server", "loadtest",
         "benchmarks", "cli", "scripts")
RANK = {name: i for i, name in enumerate(ORDER)}
# what loadtest may import besides itself: workload data and the wire contract
LOADTEST_ALLOWED = ("turnspec.tools_grammar", "turnspec.workloads", "turnspec.server.proto")
# the only product files that may import turnspec.benchmarks: the wiring of benchmark commands
BENCH_WIRING = ("cli/bench.py", "cli/simulate.py", "cli/workload.py")


def _sources() -> list[Path]:
    out = []
    for top in ORDER:
        folder = ROOT / top
        if folder.is_dir():
            out += [p for p in folder.rglob("*.py") if "_pb2" not in p.name]
    return sorted(out)


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(("turnspec", *parts))


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every turnspec import in `path`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("turnspec")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("turnspec"):
            out.append((node.lineno, node.module, [a.name for a in node.names]))
    return out


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def layer_violations(path: Path, root: Path = ROOT) -> list[str]:
    src = _package(_module_name(path, root))
    assert src is not None, path
    where = path.relative_to(root)
    bad = []
    for line, module, _ in _imports(path):
        dst = _package(module)
        if dst is None or dst == src:
            continue
        if RANK[dst] > RANK[src]:
            bad.append(f"{where}:{line}: {src} imports {module} ({dst} is above {src})")
        elif src == "loadtest" and not module.startswith(LOADTEST_ALLOWED):
            bad.append(f"{where}:{line}: loadtest imports {module}; it may use only "
                       f"{', '.join(LOADTEST_ALLOWED)} (public wire contracts)")
        elif dst == "benchmarks" and src != "scripts" and where.as_posix() not in BENCH_WIRING:
            bad.append(f"{where}:{line}: product module imports {module}; only "
                       f"{', '.join(BENCH_WIRING)} (benchmark commands) may import benchmarks")
    return bad


def private_imports(path: Path, root: Path = ROOT) -> list[str]:
    me = _module_name(path, root)
    where = path.relative_to(root)
    bad = []
    for line, module, names in _imports(path):
        if module == me:
            continue
        private_module = [p for p in module.split(".") if p.startswith("_") and p != "__init__"]
        private_names = [n for n in names if n.startswith("_")]
        if private_module or private_names:
            bad.append(f"{where}:{line}: imports private {private_names or private_module} from "
                       f"{module}")
    return bad


SPEC_CORE_ALLOWED = ("turnspec.engine.spec", "turnspec.kernels")


def spec_core_violations(path: Path, root: Path = ROOT) -> list[str]:
    """Imports of an engine (or anything but itself and kernels) from the speculation core."""
    where = path.relative_to(root)
    return [f"{where}:{line}: the speculation core imports {module}; it may import only "
            f"{', '.join(SPEC_CORE_ALLOWED)}" for line, module, _ in _imports(path)
            if not module.startswith(SPEC_CORE_ALLOWED)]


def test_the_speculation_core_imports_no_engine() -> None:
    core = sorted((ROOT / "engine" / "spec").rglob("*.py"))
    assert core, "engine/spec/ not found"
    bad = [v for p in core for v in spec_core_violations(p)]
    assert not bad, "\n".join(bad)


def test_the_core_checker_catches_an_engine_import(tmp_path: Path) -> None:
    path = tmp_path / "engine" / "spec" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text("from turnspec.engine.local.runner import ModelRunner\n"
                    "from turnspec.engine.spec.options import SpecOptions\n")
    assert spec_core_violations(path, tmp_path) == [
        "engine/spec/x.py:1: the speculation core imports turnspec.engine.local.runner; it may "
        "import only turnspec.engine.spec, turnspec.kernels"]


def test_every_package_in_the_order_exists_and_is_scanned() -> None:
    found = {_package(_module_name(p, ROOT)) for p in _sources()}
    assert found == set(ORDER), f"packages scanned: {sorted(found)}; expected {ORDER}"


def test_imports_follow_the_layer_order() -> None:
    bad = [v for p in _sources() for v in layer_violations(p)]
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_no_private_name_is_imported_across_modules() -> None:
    bad = [v for p in _sources() for v in private_imports(p)]
    assert not bad, "private imports across modules:\n" + "\n".join(bad)


@pytest.mark.parametrize(("source", "line", "expected"), [
    ("engine/x.py", "from turnspec.server.app import ServerApp", "engine imports turnspec.server.app"),
    ("kernels/x.py", "import turnspec.engine.protocol", "kernels imports turnspec.engine"),
    ("loadtest/x.py", "from turnspec.server.hub import SessionHub", "loadtest imports turnspec.server.hub"),
    ("loadtest/x.py", "from turnspec.engine.chat import ChatTemplate", "loadtest imports"),
    ("server/x.py", "from turnspec.benchmarks.spec import run", "server imports turnspec.benchmarks"),
    ("cli/serve.py", "from turnspec.benchmarks.frontend import run",
     "product module imports turnspec.benchmarks.frontend"),
    ("cli/chat.py", "import turnspec.benchmarks", "product module imports turnspec.benchmarks"),
])
def test_the_checker_catches_a_forbidden_import(tmp_path: Path, source: str, line: str,
                                              expected: str) -> None:
    """The walk itself: a file planted in a fake tree with an upward import, or a product
    import of a benchmark, is reported."""
    path = tmp_path / source
    path.parent.mkdir(parents=True)
    path.write_text(line + "\n")
    assert any(expected in v for v in layer_violations(path, tmp_path))


def test_the_checker_allows_downward_and_wire_contract_imports(tmp_path: Path) -> None:
    path = tmp_path / "loadtest" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text("from turnspec.server.proto.turnspec.v1 import generation_pb2\n"
                    "from turnspec.workloads import generate_conversations\n")
    assert layer_violations(path, tmp_path) == []


@pytest.mark.parametrize("source", ["cli/bench.py", "cli/simulate.py", "scripts/x.py"])
def test_benchmark_commands_and_scripts_may_import_benchmarks(tmp_path: Path, source: str) -> None:
    path = tmp_path / source
    path.parent.mkdir(parents=True)
    path.write_text("from turnspec.benchmarks.spec import run\n")
    assert layer_violations(path, tmp_path) == []


def test_the_checker_catches_a_private_import(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text("from turnspec.benchmarks.spec import _Acc, run\n")
    assert private_imports(path, tmp_path) == [
        "benchmarks/x.py:1: imports private ['_Acc'] from turnspec.benchmarks.spec"]
