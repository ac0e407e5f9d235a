"""Monitoring that sees everything the cluster kit runs, and the kit's shared admission window.

Prometheus (the operator's, as kube-prometheus-stack installs it) loads a PodMonitor or PrometheusRule only if it
carries the labels the Prometheus's selectors match, and scrapes a pod only if no NetworkPolicy drops the scrape.
The gateway exports the golden metrics the models' alerts read, so it is scraped too; an alert on a target that is
gone must fire (`absent`), not return no data. KEDA falls back when Prometheus cannot be read; a colour is never
switched to with no pod. The gateway replicas share one admission window, in the kit's Redis by default.
No PromQL engine is installed here: the alert expressions are checked by structure, not evaluated."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import MODEL
from gateway_harness import client as gateway_client
from gateway_harness import roll_out
from k8s_schema import validate_strictly
from prometheus_client.parser import text_string_to_metric_families

from ai_platform.backend import for_config
from ai_platform.config import Platform, PlatformConfig, load_platform, parse
from ai_platform.errors import ConfigError, WarmUpError
from ai_platform.rollout import cluster_gateway, redis_kit
from ai_platform.rollout.kubernetes import GATEWAY, render, warm_up_pods

DIGEST = "sha256:" + "ab" * 32
GATEWAY_IMAGE = "registry.example.com/ai-platform/code@sha256:" + "ef" * 32


def configured(platform: Platform, **changes: Any) -> Platform:
    """`platform` with platform.yaml's sections merged with `changes`, validated as platform.yaml is."""
    raw = platform.config.model_dump(mode="json", exclude_unset=True)
    for section, values in changes.items():
        raw[section] = {**raw.get(section, {}), **values}
    return platform.model_copy(update={"config": parse(PlatformConfig, raw, Path("platform.yaml"))})


def kit(platform: Platform) -> list[dict[str, Any]]:
    """Everything `rollout render` writes for one model and the gateway."""
    image = f"registry.example.com/ml/{MODEL}@{DIGEST}"
    model = render(platform, platform.model(MODEL), image, DIGEST, color="green", live="blue")
    return model + cluster_gateway.manifests(platform, GATEWAY_IMAGE) + redis_kit.manifests(platform)


def pods(manifests: list[dict[str, Any]]) -> list[tuple[str, dict[str, str], list[dict[str, Any]]]]:
    """(Deployment name, pod labels, containers) of every Deployment."""
    return [
        (
            m["metadata"]["name"],
            m["spec"]["template"]["metadata"]["labels"],
            m["spec"]["template"]["spec"]["containers"],
        )
        for m in manifests
        if m["kind"] == "Deployment"
    ]


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return selector.get("matchLabels", {}).items() <= labels.items() and not selector.get("matchExpressions")


def test_prometheus_scrapes_every_deployment_that_exports_metrics_the_alerts_read(demo_repo: Path) -> None:
    """Before: the only PodMonitor selected the vLLM pods, so the gateway's golden metrics (PII, injection,
    schema, repetition) were never scraped: their alerts could not fire and the dashboard's gateway panels
    stayed empty."""
    manifests = kit(load_platform(demo_repo))
    monitors = [m for m in manifests if m["kind"] == "PodMonitor"]
    scraped = {}
    for name, labels, containers in pods(manifests):
        found = [m for m in monitors if selects(m["spec"]["selector"], labels)]
        if name.startswith("ai-platform-redis"):
            assert not found  # no exporter: nothing to scrape
            continue
        assert found, f"{name}: no PodMonitor selects its pods"
        for endpoint in found[0]["spec"]["podMetricsEndpoints"]:
            ports = {p["name"] for c in containers for p in c.get("ports", [])}
            assert endpoint["port"] in ports and endpoint["path"] == "/metrics", (name, endpoint)
        scraped[name] = found[0]
    assert cluster_gateway.NAME in scraped and f"{MODEL}-green" in scraped


def test_the_gateway_serves_the_metrics_its_alerts_read_on_its_http_port_without_a_key(
    demo_repo: Path, tmp_path: Path
) -> None:
    """What the gateway's PodMonitor scrapes: /metrics on the port that serves callers (Prometheus sends no key),
    carrying every gateway metric a model's PrometheusRule names."""
    platform = load_platform(demo_repo)
    (rule,) = [m for m in kit(platform) if m["kind"] == "PrometheusRule" and m["metadata"]["name"] == MODEL]
    read = {
        re.sub(r"_(sum|count|bucket|total)$", "", name)
        for r in rule["spec"]["groups"][0]["rules"]
        for name in re.findall(r"\bai_platform_\w+", r["expr"])
    }
    assert {"ai_platform_reply_pii_entities", "ai_platform_request_injection_score"} <= read
    roll_out(tmp_path, model=MODEL, color="green")
    with gateway_client(tmp_path) as client:  # no key
        reply = client.get("/metrics")
    assert reply.status_code == 200
    exported = {family.name for family in text_string_to_metric_families(reply.text)}
    assert read <= exported, read - exported
    container = next(c for _, labels, cs in pods(kit(platform)) if labels.items() >= GATEWAY.items() for c in cs)
    assert container["command"][container["command"].index("--port") + 1] == str(container["ports"][0]["containerPort"])


def test_no_network_policy_drops_a_scrape(demo_repo: Path) -> None:
    """Every NetworkPolicy that selects a scraped pod admits the monitoring namespace on the scraped port."""
    platform = configured(load_platform(demo_repo), kubernetes={"monitoring": {"namespace": "observability"}})
    manifests = kit(platform)
    monitors = [m for m in manifests if m["kind"] == "PodMonitor"]
    policies = [m for m in manifests if m["kind"] == "NetworkPolicy"]
    prometheus = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}}
    checked = 0
    for name, labels, _ in pods(manifests):
        monitor = next((m for m in monitors if selects(m["spec"]["selector"], labels)), None)
        for policy in (p for p in policies if selects(p["spec"]["podSelector"], labels)):
            if monitor is None:
                continue
            port = monitor["spec"]["podMetricsEndpoints"][0]["port"]
            assert any(
                prometheus in rule.get("from", [prometheus]) and {"port": port} in rule.get("ports", [{"port": port}])
                for rule in policy["spec"]["ingress"]
            ), f"{policy['metadata']['name']} drops Prometheus's scrapes of {name}"
            checked += 1
    assert checked >= 1


def test_alerts_fire_when_no_target_is_there(demo_repo: Path) -> None:
    """Before: `VllmDown` was `sum(up{...}) == 0`, no data (never firing) when no vLLM pod exists; nothing said the
    gateway was down. Now each is `absent(up{...} == 1)`, over the very pods its PodMonitor scrapes."""
    manifests = kit(load_platform(demo_repo))
    rules = {r["alert"]: r for m in manifests if m["kind"] == "PrometheusRule" for r in m["spec"]["groups"][0]["rules"]}
    for alert, pod in (("VllmDown", f"{MODEL}-green-7d9c-x2z"), ("GatewayDown", f"{cluster_gateway.NAME}-7d9c-x2z")):
        expr = rules[alert]["expr"]
        found = re.match(r'absent\(up\{namespace="([^"]+)",pod=~"([^"]+)"\} == 1\)', expr)
        assert found, expr
        assert found[1] == "ai-platform" and re.fullmatch(found[2], pod), (alert, expr)
        assert rules[alert]["labels"]["severity"] == "critical"
    assert not [a for a, r in rules.items() if re.search(r"sum\(up\{[^}]*\}\)\s*==\s*0", r["expr"])]


def test_a_model_stopped_on_purpose_does_not_page(demo_repo: Path) -> None:
    """Before: `rollout stop` scales every colour to 0 and `VllmDown` (absent `up`) fired until someone silenced it.
    Now it holds unless kube-state-metrics says every colour is meant to run 0 replicas; without those metrics the
    `unless` has nothing to drop, so a missing kube-state-metrics never silences a real outage."""
    platform = load_platform(demo_repo)
    (rule,) = [m for m in kit(platform) if m["kind"] == "PrometheusRule" and m["metadata"]["name"] == MODEL]
    (down,) = [r for r in rule["spec"]["groups"][0]["rules"] if r["alert"] == "VllmDown"]
    absent, unless = down["expr"].split(" unless on() ")
    assert absent.startswith("absent(up{")
    found = re.fullmatch(
        r'\(sum\(kube_deployment_spec_replicas\{namespace="([^"]+)",deployment=~"([^"]+)"\}\) == 0\)', unless
    )
    assert found, unless
    assert found[1] == platform.config.kubernetes.namespace
    for name in (f"{MODEL}-blue", f"{MODEL}-green"):
        assert re.fullmatch(found[2], name)
    assert not re.fullmatch(found[2], f"{MODEL}-canary-0123456789ab")  # a canary's replicas say nothing of users


def test_prometheus_selector_labels_and_namespace_come_from_config(demo_repo: Path) -> None:
    """Before: no label a kube-prometheus-stack Prometheus selects on (`release: <its release>`), so it never loaded
    the monitors or the rules; and `monitoring` was written into the NetworkPolicy."""
    default = kit(load_platform(demo_repo))
    for manifest in default:
        if manifest["kind"] in ("PodMonitor", "ServiceMonitor", "PrometheusRule"):
            assert manifest["metadata"]["labels"]["release"] == "kube-prometheus-stack", manifest["metadata"]["name"]
    ours = {"namespace": "observability", "labels": {"prometheus": "main", "example.com/team": "ml"}}
    platform = configured(load_platform(demo_repo), kubernetes={"monitoring": ours})
    manifests = kit(platform)
    for manifest in manifests:
        validate_strictly(manifest)
        if manifest["kind"] in ("PodMonitor", "ServiceMonitor", "PrometheusRule"):
            assert manifest["metadata"]["labels"].items() >= ours["labels"].items()
            assert "release" not in manifest["metadata"]["labels"]
    scaled = next(m for m in manifests if m["kind"] == "ScaledObject")
    assert (
        scaled["spec"]["triggers"][0]["metadata"]["serverAddress"]
        == "http://prometheus-operated.observability.svc:9090"
    )
    assert "monitoring" not in str([m for m in manifests if m["kind"] == "NetworkPolicy"])
    for bad, field in (
        ({"namespace": "Not_A_Namespace"}, "kubernetes.monitoring.namespace"),
        ({"labels": {"release": "has space"}}, "kubernetes.monitoring.labels.release"),
        ({"labels": {"-bad": "x"}}, "kubernetes.monitoring.labels.-bad"),
    ):
        with pytest.raises(ConfigError, match=re.escape(field)):
            configured(load_platform(demo_repo), kubernetes={"monitoring": bad})


def test_keda_falls_back_when_prometheus_cannot_be_read(demo_repo: Path) -> None:
    """Before: no `fallback`: with Prometheus unreachable KEDA's HPA kept whatever it had, or (a colour starting)
    nothing at all. KEDA allows a fallback only on an AverageValue trigger that is not cpu or memory."""
    platform = configured(load_platform(demo_repo), kubernetes={"autoscaling": {"fallback_replicas": 2}})
    scaled = next(m for m in kit(platform) if m["kind"] == "ScaledObject")
    validate_strictly(scaled)
    fallback = scaled["spec"]["fallback"]
    assert fallback == {"failureThreshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"}
    assert all(
        t["metricType"] == "AverageValue" and t["type"] not in ("cpu", "memory") for t in scaled["spec"]["triggers"]
    )
    assert fallback["replicas"] <= scaled["spec"]["maxReplicaCount"]
    with pytest.raises(ConfigError, match="fallback_replicas"):
        configured(load_platform(demo_repo), kubernetes={"autoscaling": {"fallback_replicas": 9, "max_replicas": 4}})


def test_scale_to_zero_is_refused_naming_the_field(demo_repo: Path) -> None:
    """Before: `min_replicas: 0` was accepted: KEDA took the colour to 0, nothing woke it (its trigger reads
    metrics only a running pod exports), and a switch counted 0 of 0 pods as rolled out."""
    with pytest.raises(ConfigError, match=r"kubernetes\.autoscaling\.min_replicas: 0 is scale-to-zero"):
        configured(load_platform(demo_repo), kubernetes={"autoscaling": {"min_replicas": 0}})


def test_a_switch_never_goes_to_a_colour_with_no_ready_pod(tmp_path: Path) -> None:
    """Defence in depth under the config check: warming up "every pod of 0" is not done, it is a WarmUpError, so
    the Service is not switched to a colour without pods."""
    from fake_kube import FakeKube, kubeconfig, serving
    from kubernetes import client, config

    with serving(FakeKube(lambda pod: 1)) as kube:
        api = client.CoreV1Api(config.new_client_from_config(str(kubeconfig(kube, tmp_path / "kubeconfig"))))
        with pytest.raises(WarmUpError, match="0 of 1 pods ready"):
            warm_up_pods(api, MODEL, "green", "ai-platform", 0, 0.0, "the Service still routes to the old color")


def test_the_gateway_replicas_share_one_window_in_the_kits_redis(demo_repo: Path) -> None:
    """Before: the window defaulted to memory://, one per replica: two replicas admitted twice the budget."""
    platform = load_platform(demo_repo)
    manifests = cluster_gateway.manifests(platform, GATEWAY_IMAGE) + redis_kit.manifests(platform)
    objects = {(m["kind"], m["metadata"]["name"]): m for m in manifests}
    args = objects["Deployment", cluster_gateway.NAME]["spec"]["template"]["spec"]["containers"][0]["args"]
    storage = args[args.index("--window-storage") + 1]
    # no cluster domain assumed; a Redis that stops answering costs a request half a second, not the OS's
    # TCP timeouts, before the replica admits from its own windows (`admission.Windows`)
    assert storage == "redis://ai-platform-redis.ai-platform.svc:6379?socket_timeout=0.5&socket_connect_timeout=0.5"
    from ai_platform.serving.gateway.admission import Windows

    Windows(storage)  # the query is one the storage takes
    redis = objects["Deployment", "ai-platform-redis"]
    service = objects["Service", "ai-platform-redis"]
    assert selects({"matchLabels": service["spec"]["selector"]}, redis["spec"]["template"]["metadata"]["labels"])
    assert service["spec"]["ports"][0]["port"] == 6379
    pod = redis["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert re.fullmatch(r"redis:[\w.-]+@sha256:[0-9a-f]{64}", container["image"])
    assert container["securityContext"]["runAsNonRoot"] and container["securityContext"]["runAsUser"] != 0
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    policy = objects["NetworkPolicy", "ai-platform-redis"]["spec"]
    assert selects(policy["podSelector"], redis["spec"]["template"]["metadata"]["labels"])
    assert [peer for rule in policy["ingress"] for peer in rule["from"]] == [{"podSelector": {"matchLabels": GATEWAY}}]
    for manifest in manifests:
        validate_strictly(manifest)


def test_platform_yaml_may_name_another_redis_but_not_one_window_per_replica(demo_repo: Path) -> None:
    platform = configured(load_platform(demo_repo), gateway={"window_storage": "redis://redis.shared.svc:6379/2"})
    manifests = cluster_gateway.manifests(platform, GATEWAY_IMAGE)
    args = manifests[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--window-storage") + 1] == "redis://redis.shared.svc:6379/2"
    assert redis_kit.manifests(platform) == []  # not the kit's: none rendered
    memory = configured(load_platform(demo_repo), gateway={"window_storage": "memory://"})
    with pytest.raises(ConfigError, match=r"gateway\.window_storage: memory:// keeps one admission window"):
        cluster_gateway.manifests(memory, GATEWAY_IMAGE)
    quantize = "registry.example.com/ai-platform/quantize@" + DIGEST  # the target's other requirement
    gpu = {**memory.config.kubernetes.gpu.model_dump(exclude_unset=True), "quantize_image": quantize}
    kubernetes = configured(memory, execution={"target": "kubernetes"}, kubernetes={"gpu": gpu}).config
    with pytest.raises(ConfigError, match=r"gateway\.window_storage: memory://"):  # before any step runs there
        for_config(kubernetes)
