"""The layers of docs/architecture.md: the library never imports the orchestration layer, and no two of
its subpackages import each other, directly or around a loop."""

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

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
    for name in (
        "ai_platform",
        "assets",
        "sensors",
        "tests",
        "benchmarks",
        ".ci/run",
        "workspace.yaml",
        "definitions.py",
        "pyproject.toml",
        "README.md",
        "Makefile",
    ):
        assert (ROOT / name).exists(), name


def package_of(module: str) -> str | None:
    """`ai_platform.serving.vllm` -> `serving`; top-level modules (`ai_platform.config`) are their own package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ai_platform" and len(parts) > 1 else None


def package_graph(root: Path) -> dict[str, set[str]]:
    """Which ai_platform package imports which, counting imports inside functions too (a lazy import hides
    a loop from Python, not from the design)."""
    graph: dict[str, set[str]] = {}
    for path in (root / "ai_platform").rglob("*.py"):
        relative = path.relative_to(root).with_suffix("")
        here = package_of(".".join(relative.parts))
        if here is None or here == "__init__":
            continue
        graph.setdefault(here, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: Iterable[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                there = package_of(name)
                if there and there != here:
                    graph[here].add(there)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one package (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_packages() -> None:
    assert cycles(package_graph(ROOT)) == []


def test_a_planted_loop_is_found(tmp_path: Path) -> None:
    for package, imports in {
        "a": "from ai_platform.b.x import y",
        "b": "def f():\n    import ai_platform.c\n",
        "c": "from ai_platform.a import z",
    }.items():
        (tmp_path / "ai_platform" / package).mkdir(parents=True)
        (tmp_path / "ai_platform" / package / "m.py").write_text(imports + "\n")
    (tmp_path / "ai_platform" / "d.py").write_text("from ai_platform import config\n")
    assert cycles(package_graph(tmp_path)) == [["a", "b", "c"]]


def test_serving_imports_nothing_from_evaluation() -> None:
    """The gateway's detectors live in `detectors/` and its model-server client in `serving/upstream.py`: serving
    runs without the canary's code (imports inside functions count)."""
    assert "evaluation" not in package_graph(ROOT)["serving"]
    assert "serving" not in package_graph(ROOT)["detectors"]


def test_the_gateway_app_keeps_routes_and_the_factory() -> None:
    """The request steps live in serving/gateway/pipeline.py, once for every route family, not in app.py."""
    app = (ROOT / "ai_platform" / "serving" / "gateway" / "app.py").read_text(encoding="utf-8")
    assert len(app.splitlines()) < 300
    assert "from ai_platform.serving.gateway.pipeline import" in app


def test_an_import_of_evaluation_inside_a_serving_function_is_seen(tmp_path: Path) -> None:
    (tmp_path / "ai_platform" / "serving" / "gateway").mkdir(parents=True)
    (tmp_path / "ai_platform" / "serving" / "gateway" / "m.py").write_text(
        "def f():\n    from ai_platform.evaluation.pii import find_pii\n"
    )
    assert package_graph(tmp_path)["serving"] == {"evaluation"}


@pytest.mark.parametrize("package", ["records", "backend", "serving", "evaluation", "detectors"])
def test_graph_names_the_packages(package: str) -> None:
    assert package in package_graph(ROOT)
