"""Sized and spread (issue 31): vLLM and the quantize pod ask for CPU, memory and a shared memory; more than one
GPU is tensor parallel; each colour has a disruption budget and every serving pod a spread; a canary is owned by
the step pod that made it and the next run clears what a killed one left; every object name fits 63 characters;
`rollout render` cannot write a Service that selects a paused colour.

The canary's clean-up runs the real `kubernetes` client against the stand-in API server (`fake_kube`), the killed
run in a child process that SIGKILLs itself inside `candidate_server`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import MODEL, ROOT
from fake_kube import FakeKube, kubeconfig
from fake_kube import serving as serving_kube

from ai_platform.config import load_platform
from ai_platform.errors import ConfigError, ServingError
from ai_platform.kube import gpu_pod_spec
from ai_platform.records import ImageLocation, ModelImage
from ai_platform.rollout import cluster_gateway
from ai_platform.rollout import kubernetes as k8s
from ai_platform.serving.vllm import server_args

NS = "ai-platform"
DIGEST = "sha256:" + "ab" * 32
REF = f"registry.example.com/ml/{MODEL}@{DIGEST}"
GATEWAY_IMAGE = "registry.example.com/ai-platform/code@sha256:" + "ef" * 32
CRDS = {"ScaledObject", "PodMonitor", "PrometheusRule", "ServiceMonitor"}
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def configured(
    repo: Path, gpu: dict[str, Any] | None = None, model: dict[str, Any] | None = None, *, stem: str = MODEL
) -> Any:
    """The demo platform with `kubernetes.gpu` and the fields of the model spec in models/`stem`.yaml updated."""
    platform_yaml = repo / "platform.yaml"
    config = yaml.safe_load(platform_yaml.read_text())
    config["kubernetes"]["gpu"].update(gpu or {})
    platform_yaml.write_text(yaml.safe_dump(config))
    if model:
        spec_yaml = repo / "models" / f"{stem}.yaml"
        spec = yaml.safe_load(spec_yaml.read_text())
        spec.update(model)
        spec_yaml.write_text(yaml.safe_dump(spec))
    return load_platform(repo)


def vllm_container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


# ---------------------------------------------------------------- 1. resources and /dev/shm


def test_vllm_and_the_quantize_pod_ask_for_cpu_memory_and_a_shared_memory(own_demo_repo: Path) -> None:
    platform = configured(own_demo_repo, {"quantize_image": "registry.example.com/q@sha256:" + "12" * 32})
    deployment = k8s.deployment(platform, platform.model(MODEL), "blue", REF, DIGEST)
    quantize = gpu_pod_spec(platform, platform.config.kubernetes.gpu.quantize_image, ["q"], "quantize_image")
    for pod in (deployment["spec"]["template"]["spec"], quantize):
        (container,) = pod["containers"]
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        assert requests == {"nvidia.com/gpu": "1", "cpu": "4", "memory": "32Gi"}, requests
        assert limits == {"nvidia.com/gpu": "1", "memory": "32Gi"}, limits  # no CPU limit: no CFS throttling
        shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
        assert shm == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    kubernetes_validate.validate(deployment, "1.35.0", strict=True)
    kubernetes_validate.validate(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}, "spec": quantize}, "1.35.0", strict=True
    )


def test_the_pod_sizes_come_from_platform_yaml(own_demo_repo: Path) -> None:
    sizes = {"cpu": "12", "memory": "96Gi", "cpu_limit": "16", "memory_limit": "120Gi", "shm_size": "32Gi"}
    platform = configured(own_demo_repo, {"resources": sizes})
    container = vllm_container(k8s.deployment(platform, platform.model(MODEL), "blue", REF, DIGEST))
    assert container["resources"] == {
        "requests": {"nvidia.com/gpu": "1", "cpu": "12", "memory": "96Gi"},
        "limits": {"nvidia.com/gpu": "1", "cpu": "16", "memory": "120Gi"},
    }


@pytest.mark.parametrize(
    ("resources", "error"),
    [
        ({"memory": "lots"}, r"kubernetes\.gpu\.resources\.memory: .*quantity"),
        ({"cpu": "0.01"}, r"kubernetes\.gpu\.resources\.cpu: .*at least 100m"),
        ({"memory": "256Mi"}, r"kubernetes\.gpu\.resources\.memory: .*at least 1Gi"),
        ({"memory": "16Gi", "shm_size": "16Gi"}, r"kubernetes\.gpu\.resources.*shm_size.*under the memory limit"),
        ({"memory": "32Gi", "memory_limit": "16Gi"}, r"memory_limit.*at least the request"),
        ({"cpu": "8", "cpu_limit": "4"}, r"cpu_limit.*at least the request"),
        ({"gpus": 2}, r"kubernetes\.gpu\.resources\.gpus: unknown field"),
    ],
)
def test_the_pod_sizes_are_bounded(own_demo_repo: Path, resources: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        configured(own_demo_repo, {"resources": resources})


# ---------------------------------------------------------------- 2. tensor parallel


def test_more_than_one_gpu_is_one_tensor_parallel_server(own_demo_repo: Path) -> None:
    platform = configured(own_demo_repo, {"count": 4})
    spec = platform.model(MODEL)
    args = vllm_container(k8s.deployment(platform, spec, "blue", REF, DIGEST))["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "4"
    on_cpu = server_args(Path("/m"), MODEL, spec.serving, "cpu", "127.0.0.1", 8000)  # the embedded CPU path
    assert "--tensor-parallel-size" not in on_cpu
    doubled = spec.serving.model_copy(update={"extra_args": ["--tensor-parallel-size", "2"]})
    with pytest.raises(ServingError, match=r"serving\.extra_args.*tensor-parallel-size.*kubernetes\.gpu\.count"):
        server_args(Path("/m"), MODEL, doubled, "gpu", "0.0.0.0", 8000, gpus=4)


# ---------------------------------------------------------------- 3. disruption budget and spread


def test_each_colour_has_a_disruption_budget_that_never_blocks_a_drain(demo_repo: Path) -> None:
    platform = load_platform(demo_repo)
    spec = platform.model(MODEL)
    rendered = k8s.render(platform, spec, REF, DIGEST, "green", "blue")
    deployment = next(m for m in rendered if m["kind"] == "Deployment")
    (budget,) = [m for m in rendered if m["kind"] == "PodDisruptionBudget"]
    kubernetes_validate.validate(budget, "1.35.0", strict=True)
    assert budget["metadata"]["name"] == f"{MODEL}-green"
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]  # one colour's pods: one Deployment's
    assert budget["spec"]["maxUnavailable"] == 1 and "minAvailable" not in budget["spec"]  # 1 replica drains
    assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"  # a crash-looping pod never blocks
    plan = k8s.switch(platform, spec, REF, DIGEST, "green", "blue")
    assert [m for m in plan.start if m["kind"] == "PodDisruptionBudget"] == [budget]
    canary = k8s.canary_manifests(platform, spec, REF, DIGEST)
    assert not [m for m in canary if m["kind"] == "PodDisruptionBudget"]  # one replica, minutes long


def test_vllm_and_gateway_pods_spread_over_nodes_and_zones(demo_repo: Path) -> None:
    platform = load_platform(demo_repo)
    deployment = k8s.deployment(platform, platform.model(MODEL), "blue", REF, DIGEST)
    gateway = next(m for m in cluster_gateway.manifests(platform, GATEWAY_IMAGE) if m["kind"] == "Deployment")
    for workload in (deployment, gateway):
        spread = workload["spec"]["template"]["spec"]["topologySpreadConstraints"]
        assert [c["topologyKey"] for c in spread] == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
        for constraint in spread:
            assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"  # a preference: never an unschedulable GPU pod
            assert constraint["labelSelector"] == workload["spec"]["selector"]
            assert constraint["matchLabelKeys"] == ["pod-template-hash"]  # this revision's pods, not the old ones
        kubernetes_validate.validate(workload, "1.35.0", strict=True)


# ---------------------------------------------------------------- 4. canaries owned and cleaned up


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    with serving_kube(FakeKube(lambda pod: 1)) as found:  # no canary pod is called here: any port
        config = str(kubeconfig(found, tmp_path / "kubeconfig"))
        monkeypatch.setenv("KUBECONFIG", config)
        import kubernetes.config
        import kubernetes.config.kube_config

        monkeypatch.setattr(kubernetes.config, "KUBE_CONFIG_DEFAULT_LOCATION", config)
        monkeypatch.setattr(kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", config)
        yield found


def pushed(n: str) -> ModelImage:
    return ModelImage(f"sha256:{n * 64}", ImageLocation("/x", f"registry.example.com/ml/{MODEL}@sha256:{n * 64}"), "w")


KILLED_RUN = """\
import os, signal, sys
from pathlib import Path
from types import SimpleNamespace
from ai_platform.config import load_platform
from ai_platform.records import ImageLocation, ModelImage
from ai_platform.rollout import kubernetes as k8s
k8s.POD_NAMESPACE_FILE = Path(sys.argv[3])  # where a pod's service-account namespace is mounted
platform = load_platform(Path(sys.argv[1]), home=Path(sys.argv[2]))
digest = "sha256:" + sys.argv[4] * 64
image = ModelImage(digest, ImageLocation("/x", "registry.example.com/ml/m@" + digest), "w")
snap = SimpleNamespace(platform=platform, spec=platform.model(sys.argv[5]))
with k8s.candidate_server(snap, image, log=print, timeout_s=10):
    os.kill(os.getpid(), signal.SIGKILL)  # the step pod is killed while the canary eval runs
"""


def killed_canary_run(kube: FakeKube, repo: Path, tmp_path: Path, n: str, *, step_pod: str | None) -> None:
    """A canary run for image `n` killed with SIGKILL inside `candidate_server`: in the step pod `step_pod`
    (its service-account namespace the platform's), or off the cluster (None)."""
    namespace_file = tmp_path / f"namespace-{n}"
    if step_pod:
        namespace_file.write_text(NS)
    env = {**os.environ, "HOSTNAME": step_pod or "a-laptop", "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(repo), str(tmp_path / "home"), str(namespace_file), n, MODEL],
        env=env,
        capture_output=True,
        text=True,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr


def test_a_killed_step_pod_takes_its_canary_with_it(demo_repo: Path, tmp_path: Path, kube: FakeKube) -> None:
    step = kube.add_pod(NS, "dagster-step-canary-eval-x7k2p")
    killed_canary_run(kube, demo_repo, tmp_path, "1", step_pod="dagster-step-canary-eval-x7k2p")
    name = f"{MODEL}-canary-{'1' * 12}"
    for plural in ("deployments", "services"):  # the `finally` never ran: both are still there
        found = kube.get(plural, NS, name)
        assert found is not None, plural
        assert found["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": step["metadata"]["name"], "uid": step["metadata"]["uid"]}
        ]
        assert found["metadata"]["labels"]["ai-platform/canary"] == "true"
    assert kube.pods(NS, name)
    kube.delete("pods", NS, step["metadata"]["name"])  # the pod goes: the garbage collector follows its owners
    assert kube.get("deployments", NS, name) is None and kube.get("services", NS, name) is None
    assert not kube.pods(NS, name)


def test_off_the_cluster_a_canary_has_no_owner(demo_repo: Path, tmp_path: Path, kube: FakeKube) -> None:
    kube.add_pod(NS, "a-laptop")  # a pod that happens to share the host's name is not this process
    killed_canary_run(kube, demo_repo, tmp_path, "2", step_pod=None)
    found = kube.get("deployments", NS, f"{MODEL}-canary-{'2' * 12}")
    assert found is not None and "ownerReferences" not in found["metadata"]


def test_the_next_canary_deletes_what_a_killed_run_left(demo_repo: Path, tmp_path: Path, kube: FakeKube) -> None:
    platform = load_platform(demo_repo, home=tmp_path / "home")
    snap = SimpleNamespace(platform=platform, spec=platform.model(MODEL))

    def leave(n: str, *, owner: tuple[str, str] | None = None, age_s: float = 0.0) -> str:
        for manifest in k8s.canary_manifests(platform, snap.spec, REF, f"sha256:{n * 64}"):
            plural = f"{manifest['kind'].lower()}s"
            if owner:
                manifest["metadata"]["ownerReferences"] = [
                    {"apiVersion": "v1", "kind": "Pod", "name": owner[0], "uid": owner[1]}
                ]
            made = kube.apply(plural, NS, manifest["metadata"]["name"], manifest)
            made["metadata"]["creationTimestamp"] = kube.timestamp(age_s)
        return f"{MODEL}-canary-{n * 12}"

    orphan = leave(
        "3", owner=("dagster-step-gone", "uid-of-a-pod-that-is-gone")
    )  # its GC has not run yet, or missed it
    forgotten = leave("4", age_s=k8s.CANARY_MAX_AGE_S + 60)  # no owner (made off the cluster), long past a run
    running = leave("5", age_s=60)  # another run's, off the cluster, just started
    alive = kube.add_pod(NS, "dagster-step-alive")
    owned = leave(
        "6", owner=("dagster-step-alive", alive["metadata"]["uid"]), age_s=k8s.CANARY_MAX_AGE_S + 60
    )  # its run still runs
    failed = kube.add_pod(NS, "dagster-step-oom-killed")
    failed["status"]["phase"] = "Failed"  # a Job's failed pod stays: the garbage collector keeps what it owns
    finished = leave("8", owner=("dagster-step-oom-killed", failed["metadata"]["uid"]))
    logged: list[str] = []
    with k8s.candidate_server(snap, pushed("7"), log=logged.append, timeout_s=10) as url:
        assert url == f"http://{MODEL}-canary-{'7' * 12}.{NS}.svc"
    for name in (orphan, forgotten, finished):
        assert kube.get("deployments", NS, name) is None and kube.get("services", NS, name) is None, name
        assert any(name in line and "stale" in line for line in logged), logged
    for name in (running, owned):
        assert not any(name in line for line in logged), logged
        assert kube.get("deployments", NS, name) is not None and kube.get("services", NS, name) is not None, name
    deleted = [e for e in kube.events if e[0] == "delete"]
    first_apply = kube.events.index(("apply", "Deployment", f"{MODEL}-canary-{'7' * 12}"))
    assert all(kube.events.index(e) < first_apply for e in deleted if e[2] in (orphan, forgotten, finished))


# ---------------------------------------------------------------- 5. every object name fits 63 characters


def every_object(platform: Any, spec: Any) -> list[dict[str, Any]]:
    plan = k8s.switch(platform, spec, REF, DIGEST, "green", "blue")
    return [
        *k8s.render(platform, spec, REF, DIGEST, "blue", "blue"),
        *plan.start,
        plan.route,
        *plan.release,
        *plan.retire,
        *k8s.canary_manifests(platform, spec, REF, "sha256:" + "f" * 64),
    ]


def test_the_longest_allowed_model_name_fits_every_object_it_names(own_demo_repo: Path) -> None:
    from ai_platform.config import MODEL_OBJECT_SUFFIXES, longest_model_name

    limit = longest_model_name()
    assert limit == 63 - max(len(suffix) for suffix in MODEL_OBJECT_SUFFIXES) == 43
    name = "m" + "x" * (limit - 1)
    spec_yaml = own_demo_repo / "models" / f"{MODEL}.yaml"
    spec_yaml.rename(own_demo_repo / "models" / f"{name}.yaml")
    platform = configured(own_demo_repo, model={"name": name}, stem=name)
    spec = platform.model(name)
    longest = 0
    suffixes = "|".join(re.escape(s).replace("0" * 12, "[0-9a-f]{12}") for s in MODEL_OBJECT_SUFFIXES)
    for manifest in every_object(platform, spec):
        object_name = manifest["metadata"]["name"]
        if object_name.startswith(name):  # every object a model's name names takes a suffix from the one table
            assert re.fullmatch(re.escape(name) + f"({suffixes})", object_name), object_name
        assert DNS_1035.match(object_name) and len(object_name) <= 63, object_name
        for value in manifest["metadata"].get("labels", {}).values():
            assert len(value) <= 63, value  # app.kubernetes.io/instance carries the colour's name
        longest = max(longest, len(object_name))
        if manifest["kind"] not in CRDS:
            kubernetes_validate.validate(manifest, "1.35.0", strict=True)
    assert longest == 63  # the canary's Service: exactly at the limit


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("m" + "x" * 43, r"name: .*'m(x){43}-canary-0{12}' .*64 characters.*at most 43"),
        ("7b-instruct", r"name: .*'7b-instruct'.*start with a letter"),
    ],
)
def test_a_model_name_that_makes_an_invalid_object_name_is_refused(own_demo_repo: Path, name: str, error: str) -> None:
    (own_demo_repo / "models" / f"{MODEL}.yaml").rename(own_demo_repo / "models" / f"{name}.yaml")
    with pytest.raises(ConfigError, match=error):
        configured(own_demo_repo, model={"name": name}, stem=name)


# ---------------------------------------------------------------- 6. render never routes to a paused colour


def test_render_never_writes_a_service_that_selects_a_paused_colour(demo_repo: Path, tmp_path: Path) -> None:
    command = [*("rollout", "render", MODEL, "--repo", str(demo_repo), "--out", str(tmp_path), "--json")]
    command += [*("--image", REF, "--gateway-image", GATEWAY_IMAGE, "--color", "green", "--live", "blue")]
    env = {**os.environ, "AI_PLATFORM_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "ai_platform.cli", *command], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    written = [yaml.safe_load(path.read_text()) for path in tmp_path.glob("*.yaml")]
    (routed,) = [m for m in written if m["kind"] == "Service" and m["metadata"]["name"] == MODEL]
    live = routed["spec"]["selector"]["ai-platform/color"]
    assert live == "blue"
    for manifest in written:
        if manifest["metadata"]["name"] != f"{MODEL}-{live}":
            continue
        paused = (manifest["metadata"].get("annotations") or {}).get(k8s.PAUSED_REPLICAS)
        assert paused != "0" and manifest.get("spec", {}).get("replicas") != 0, manifest["kind"]
    green = [m["kind"] for m in written if m["metadata"]["name"] == f"{MODEL}-green"]
    assert sorted(green) == ["Deployment", "PodDisruptionBudget", "ScaledObject"]  # the colour being deployed


def test_a_rendered_set_that_routes_to_a_paused_colour_is_refused(demo_repo: Path) -> None:
    platform = load_platform(demo_repo)
    spec = platform.model(MODEL)
    good = k8s.render(platform, spec, REF, DIGEST, "blue", "blue")
    k8s.check_routes(good)
    with pytest.raises(ServingError, match=rf"Service {MODEL} selects blue.*{MODEL}-blue.*paused at 0"):
        k8s.check_routes([*good, k8s.scaled_object(platform, spec, "blue", retired=True)])
    stopped = k8s.deployment(platform, spec, "blue", REF, DIGEST, count=0)
    with pytest.raises(ServingError, match=rf"Service {MODEL} selects blue.*Deployment {MODEL}-blue.*0 replicas"):
        k8s.check_routes([*good[1:], stopped])
