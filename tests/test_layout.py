"""The layers of DESIGN.md §3: the library never imports the orchestration layer."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("dagster", "assets", "sensors", "definitions")


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_library_never_imports_orchestration() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_roots(path) & set(FORBIDDEN))
        for path in (ROOT / "ai_platform").rglob("*.py")
        if imported_roots(path) & set(FORBIDDEN)
    }
    assert offenders == {}


def test_top_level_layout() -> None:
    for name in ("ai_platform", "assets", "sensors", "tests", "benchmarks", ".ci/run", "workspace.yaml",
                 "definitions.py", "pyproject.toml", "README.md", "Makefile"):  # fmt: skip
        assert (ROOT / name).exists(), name
