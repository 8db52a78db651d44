"""The example packages are imported one way: by their own names with ``examples/`` on ``sys.path``
(``hopper_gemm``, ``streaming``, ``tile_comm``, ...), never as ``examples.<package>``, which would load
a second copy of each module (two classes of one name, two caches) beside the first. Parsed with
:mod:`ast`; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("tests", "examples", "benchmarks", "contrib")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_no_file_imports_an_example_package_through_examples():
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[path.relative_to(ROOT)] = imported_modules(path)
    through = {
        str(p): sorted(n for n in names if n == "examples" or n.startswith("examples.")) for p, names in found.items()
    }
    assert not {p: n for p, n in through.items() if n}, "import the package by its name, examples/ on sys.path"
    # the check sees the example packages' imports at all: both of the big ones, from the tests
    tests = set().union(*(names for p, names in found.items() if p.parts[0] == "tests"))
    assert any(n.startswith("hopper_gemm") for n in tests) and any(n.startswith("streaming") for n in tests)


def test_no_module_name_is_both_a_benchmark_and_an_example():
    """Scripts put ``benchmarks/`` or ``examples/`` first on ``sys.path`` in either order: a name in both
    (a ``benchmarks/streaming.py`` beside ``examples/streaming/``) would import whichever came first."""

    def names(folder: Path) -> set[str]:
        return {p.stem for p in folder.glob("*.py")} | {
            p.name for p in folder.iterdir() if (p / "__init__.py").exists()
        }

    scripts = names(ROOT / "benchmarks") | names(ROOT / "benchmarks" / "studies")
    packages = names(ROOT / "examples") | names(ROOT / "contrib")
    assert "streaming" in packages and "gemm" in scripts  # it looks where the names are
    assert not scripts & packages
