"""A blue/green switch in the cluster that loses nothing (issue 30): the new colour starts at the live colour's
replicas, the Service flips only once every new pod answered a warm-up completion, the old colour's pods drain
(a preStop sleep, a grace period past the longest request) and it keeps its replicas for the rollback window.

`apply_rollout` runs unchanged against the real `kubernetes` client talking to a stand-in API server
(`fake_kube`), whose pods are stand-in vLLM servers on 127.0.0.1 (`fake_upstream`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kubernetes_validate
import pytest
from conftest import MODEL
from fake_kube import FakeKube, kubeconfig
from fake_kube import serving as serving_kube
from fake_upstream import FakeUpstream, serving

from ai_platform.config import Platform, load_platform
from ai_platform.errors import ConfigError, ServingError
from ai_platform.records import ImageLocation, ModelImage, ModelState, PromptBundle, Records
from ai_platform.rollout.kubernetes import apply_rollout, rollback_target, switch

NS = "ai-platform"


def shipped(n: str) -> tuple[ModelImage, PromptBundle]:
    where = ImageLocation("/built/elsewhere", f"registry.example.com/ml/{MODEL}@sha256:{n * 64}")
    pushed = f"registry.example.com/ml/{MODEL}-prompts@sha256:{n * 64}"
    return ModelImage(f"sha256:{n * 64}", where, "w"), PromptBundle(f"sha256:{n * 64}", "c", "/elsewhere", pushed)


@dataclass
class Cluster:
    """The stand-in API server, a stand-in vLLM per pod, and the platform whose state they follow."""

    kube: FakeKube
    platform: Platform
    pods: dict[str, FakeUpstream] = field(default_factory=dict)  # pod name -> its server
    sick: set[str] = field(default_factory=set)  # colours whose new pods never answer a completion
    logged: list[str] = field(default_factory=list)

    def rollout(self, image: ModelImage, bundle: PromptBundle, timeout_s: float = 30.0) -> dict[str, Any]:
        snap = SimpleNamespace(platform=self.platform, spec=self.platform.model(MODEL))
        return apply_rollout(snap, image, bundle, log=self.logged.append, timeout_s=timeout_s)

    def state(self) -> ModelState:
        found = Records(self.platform.artifacts()).find(ModelState, MODEL)
        assert found is not None
        return found

    def obj(self, plural: str, name: str) -> dict[str, Any]:
        found = self.kube.get(plural, NS, name)
        assert found is not None, name
        return found

    def pod_names(self, color: str) -> list[str]:
        return [p["metadata"]["name"] for p in self.kube.pods(NS, f"{MODEL}-{color}")]


@pytest.fixture
def cluster(demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    with running(load_platform(demo_repo, home=tmp_path / "home"), tmp_path, monkeypatch) as found:
        yield found


@contextmanager
def running(platform: Platform, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    assert platform.config.kubernetes.namespace == NS
    pods: list[ExitStack] = []  # each pod's server, stopped side by side at the end (each stop waits 0.5 s)
    with ExitStack() as stack:
        found: Cluster

        def kubelet(pod: dict[str, Any]) -> int:
            color = pod["metadata"]["labels"]["ai-platform/color"]
            upstream = FakeUpstream(default="ok")
            if color in found.sick:
                upstream.replies.extend([(503, "loading")] * 10_000)
            pods.append(own := ExitStack())
            own.enter_context(serving(upstream))
            found.pods[pod["metadata"]["name"]] = upstream
            return int(upstream.url.rsplit(":", 1)[1])

        @stack.callback
        def stop_pods() -> None:
            stopping = [threading.Thread(target=pod.close) for pod in pods]
            for thread in stopping:
                thread.start()
            for thread in stopping:
                thread.join()

        kube = stack.enter_context(serving_kube(FakeKube(kubelet)))
        found = Cluster(kube, platform)
        config = str(kubeconfig(kube, tmp_path / "kubeconfig"))
        monkeypatch.setenv("KUBECONFIG", config)
        # the client reads $KUBECONFIG once, when it is imported: an earlier test's would still be named there
        import kubernetes.config
        import kubernetes.config.kube_config

        monkeypatch.setattr(kubernetes.config, "KUBE_CONFIG_DEFAULT_LOCATION", config)
        monkeypatch.setattr(kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", config)
        yield found


def live_at_three(cluster: Cluster) -> None:
    """Blue rolled out, then scaled to 3 replicas by its autoscaler under load."""
    cluster.rollout(*shipped("1"))
    assert (
        cluster.pod_names("blue") and cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "blue"
    )
    cluster.kube.scale(NS, f"{MODEL}-blue", 3)
    assert len(cluster.pod_names("blue")) == 3


def test_the_new_colour_starts_at_the_live_colours_replicas_and_keda_takes_over_after_the_flip(
    cluster: Cluster,
) -> None:
    live_at_three(cluster)
    seen: dict[str, Any] = {}

    def at_the_flip(manifest: dict[str, Any]) -> None:
        if manifest["kind"] == "Service" and manifest["spec"]["selector"]["ai-platform/color"] == "green":
            seen["deployment"] = cluster.obj("deployments", f"{MODEL}-green")
            seen["scaled"] = cluster.obj("scaledobjects", f"{MODEL}-green")["spec"]["minReplicaCount"]
            seen["pods"] = len(cluster.pod_names("green"))

    cluster.kube.on_apply = at_the_flip
    done = cluster.rollout(*shipped("2"))
    assert done["color"] == "green" and done["kind"] == "model"
    assert seen["deployment"]["spec"]["replicas"] == 3 and seen["pods"] == 3  # not max(1, min_replicas)
    assert seen["scaled"] == 3  # the HPA KEDA owns holds the new colour there until it takes the traffic
    # after the flip KEDA follows the load from 3 (the spec's minimum is the floor again)
    assert cluster.obj("scaledobjects", f"{MODEL}-green")["spec"]["minReplicaCount"] == 1
    assert len(cluster.pod_names("green")) == 3
    assert cluster.state().live is not None and cluster.state().live.replicas == 3  # type: ignore[union-attr]


def test_the_service_flips_only_once_every_new_pod_answered_a_warm_up(cluster: Cluster) -> None:
    live_at_three(cluster)
    warmed: dict[str, bool] = {}

    def at_the_flip(manifest: dict[str, Any]) -> None:
        if manifest["kind"] == "Service" and manifest["spec"]["selector"]["ai-platform/color"] == "green":
            for name in cluster.pod_names("green"):
                warmed[name] = any(r.get("max_tokens") == 1 for r in cluster.pods[name].requests)

    cluster.kube.on_apply = at_the_flip
    cluster.rollout(*shipped("2"))
    assert len(warmed) == 3 and all(warmed.values()), warmed
    for name in cluster.pod_names("green"):  # one tiny completion each, for the model the pod serves
        (request,) = cluster.pods[name].requests
        assert request["model"] == MODEL and request["max_tokens"] == 1


def test_a_pod_that_never_answers_keeps_the_service_on_the_old_colour(cluster: Cluster) -> None:
    live_at_three(cluster)
    before = cluster.state()
    cluster.sick.add("green")
    with pytest.raises(ServingError, match="no completion within") as raised:
        cluster.rollout(*shipped("2"), timeout_s=3)
    assert type(raised.value).__name__ == "WarmUpError" and "the Service still routes to the old color" in str(
        raised.value
    )
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "blue"
    assert len(cluster.pod_names("blue")) == 3  # the live colour was never touched
    assert cluster.state().live == before.live


def test_the_old_colour_stays_warm_for_the_rollback_window_and_a_rollback_starts_no_pod(cluster: Cluster) -> None:
    live_at_three(cluster)
    blue = cluster.pod_names("blue")
    started = time.time()
    cluster.rollout(*shipped("2"))
    assert cluster.pod_names("blue") == blue  # still serving what was in flight, and warm
    annotations = cluster.obj("scaledobjects", f"{MODEL}-blue")["metadata"]["annotations"]
    assert annotations == {"autoscaling.keda.sh/paused-replicas": "3"}  # KEDA holds blue at its replicas
    state = cluster.state()
    window = cluster.platform.model(MODEL).rollout.rollback_window_s
    assert window == 600
    assert started + window <= state.idle_until <= time.time() + window

    mark = len(cluster.kube.events)
    done = cluster.rollout(*rollback_target(state, MODEL))
    assert done["color"] == "blue"
    assert cluster.obj("services", MODEL)["spec"]["selector"]["ai-platform/color"] == "blue"
    assert cluster.pod_names("blue") == blue  # the same pods: no scale from zero, no new pod at all
    assert not [e for e in cluster.kube.events[mark:] if e[:2] == ("pod started", f"{MODEL}-blue")]
    assert cluster.obj("scaledobjects", f"{MODEL}-green")["metadata"]["annotations"] == {
        "autoscaling.keda.sh/paused-replicas": "3"
    }  # and green is the warm one now


def test_the_idle_colour_is_paused_at_zero_once_its_window_has_passed(cluster: Cluster, demo_repo: Path) -> None:
    from ai_platform.rollout.kubernetes import reap_idle

    live_at_three(cluster)
    cluster.rollout(*shipped("2"))
    spec, until = cluster.platform.model(MODEL), cluster.state().idle_until
    assert reap_idle(cluster.platform, spec, cluster.logged.append, now=until - 1) is None
    assert len(cluster.pod_names("blue")) == 3
    assert reap_idle(cluster.platform, spec, cluster.logged.append, now=until + 1) == "blue"
    assert cluster.pod_names("blue") == [] and len(cluster.pod_names("green")) == 3
    assert cluster.obj("scaledobjects", f"{MODEL}-blue")["metadata"]["annotations"] == {
        "autoscaling.keda.sh/paused-replicas": "0"
    }
    assert cluster.state().idle_until == 0.0
    assert reap_idle(cluster.platform, spec, cluster.logged.append, now=until + 2) is None  # once

    # the next rollout is the reaper's other caller: a prompt-only one leaves no colour warm either
    cluster.kube.scale(NS, f"{MODEL}-blue", 0)
    cluster.rollout(*shipped("3"))  # green -> blue, green kept warm
    assert len(cluster.pod_names("green")) == 3 and cluster.state().idle_until
    image, _ = shipped("3")
    cluster.rollout(image, shipped("4")[1])  # the same release, new prompts: vLLM untouched
    assert cluster.pod_names("green") == [] and cluster.state().idle_until == 0.0
    assert len(cluster.pod_names("blue")) == 3


def test_the_vllm_pod_drains_before_it_stops(demo_repo: Path) -> None:
    from ai_platform.rollout.kubernetes import GATEWAY_SILENCE_S, grace_period_s

    platform = load_platform(demo_repo)
    spec = platform.model(MODEL)
    plan = switch(platform, spec, f"registry.example.com/ml/{MODEL}@sha256:{'ab' * 32}", "b", "green", "blue")
    deployment = next(m for m in plan.start if m["kind"] == "Deployment")
    kubernetes_validate.validate(deployment, "1.35.0", strict=True)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["lifecycle"] == {"preStop": {"sleep": {"seconds": 15}}}
    assert GATEWAY_SILENCE_S == 300.0  # the gateway's upstream read timeout, as the gateway builds its client
    # the longest request: queued and prefilled for as long as the gateway waits, then every token its context holds
    longest = GATEWAY_SILENCE_S + spec.serving.max_model_len * 0.1
    assert pod["terminationGracePeriodSeconds"] == grace_period_s(spec) > 15 + longest
    longer = spec.model_copy(update={"serving": spec.serving.model_copy(update={"max_model_len": 8192})})
    assert grace_period_s(longer) > 15 + GATEWAY_SILENCE_S + 8192 * 0.1


def test_a_switch_plan_in_numbers(demo_repo: Path) -> None:
    platform = load_platform(demo_repo)
    spec = platform.model(MODEL)
    ref = f"registry.example.com/ml/{MODEL}@sha256:{'ab' * 32}"
    plan = switch(platform, spec, ref, "b", "green", "blue", live_replicas=3)
    held, deployment = plan.start[:2]
    assert (held["kind"], held["spec"]["minReplicaCount"]) == ("ScaledObject", 3)  # before its Deployment
    assert deployment["spec"]["replicas"] == 3 and plan.release[0]["spec"]["minReplicaCount"] == 1
    assert plan.retire[0]["metadata"]["annotations"] == {"autoscaling.keda.sh/paused-replicas": "3"}
    beyond = switch(platform, spec, ref, "b", "green", "blue", live_replicas=9)  # past max_replicas (4)
    assert beyond.replicas == 4 and beyond.start[0]["spec"]["minReplicaCount"] == 4
    first = switch(platform, spec, ref, "b", "blue", None)
    assert first.replicas == 1 and first.retire == []
    stopped = switch(platform, spec, ref, "b", "green", "blue", live_replicas=0)  # `rollout stop` left blue at 0
    assert stopped.replicas == 1 and stopped.retire[0]["metadata"]["annotations"] == {
        "autoscaling.keda.sh/paused-replicas": "0"
    }
    no_window = spec.model_copy(update={"rollout": spec.rollout.model_copy(update={"rollback_window_s": 0})})
    assert switch(platform, no_window, ref, "b", "green", "blue", live_replicas=3).retire[0]["metadata"][
        "annotations"
    ] == {"autoscaling.keda.sh/paused-replicas": "0"}


@pytest.mark.parametrize(
    ("rollout", "error"),
    [
        ({"rollback_window_s": -1}, "rollout.rollback_window_s"),
        ({"rollback_window_s": 86_401}, "rollout.rollback_window_s"),
        ({"drain_s": 0}, "rollout.drain_s"),
        ({"rollback_window": 600}, "rollout.rollback_window: unknown field"),
    ],
)
def test_the_rollout_settings_are_bounded(own_demo_repo: Path, rollout: dict[str, Any], error: str) -> None:
    import yaml

    path = own_demo_repo / "models" / f"{MODEL}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["rollout"] = rollout
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ConfigError, match=error):
        load_platform(own_demo_repo)


def test_warm_up_asks_one_token_and_waits_for_a_pod_still_loading() -> None:
    from ai_platform.errors import WarmUpError
    from ai_platform.rollout.kubernetes import warm_up

    with serving(FakeUpstream(default="ok")) as pod:
        pod.reply("loading", 503)
        pod.reply("loading", 503)
        warm_up(pod.url, MODEL, 10, retry_s=0.05)
        assert len(pod.requests) == 3
        assert pod.requests[-1] == {"model": MODEL, "prompt": "Hello", "max_tokens": 1, "temperature": 0}
    with serving(FakeUpstream(replies=[(503, "loading")] * 1000)) as sick:
        begun = time.monotonic()
        with pytest.raises(WarmUpError, match=r"no completion within 1s \(last: answered 503\)"):
            warm_up(sick.url, MODEL, 1, retry_s=0.05)
        assert time.monotonic() - begun < 5
    with pytest.raises(WarmUpError, match="ConnectError"):  # nothing listens there any more
        warm_up(sick.url, MODEL, 0.2, retry_s=0.05)


def test_rollout_reap_on_the_command_line(own_demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """`ai-platform rollout reap MODEL`, what a schedule runs: the backend platform.yaml names, the state the
    cluster's rollouts keep, the colour paused once its window has passed."""
    import json
    from dataclasses import replace

    import yaml

    from ai_platform.cli import main
    from ai_platform.platform_repo import git

    config = yaml.safe_load((own_demo_repo / "platform.yaml").read_text())
    config["execution"] = {"target": "kubernetes"}
    config["kubernetes"]["gpu"]["quantize_image"] = "registry.example.com/q@sha256:" + "12" * 32
    (own_demo_repo / "platform.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(own_demo_repo, "commit", "--quiet", "--no-gpg-sign", "-am", "serve on kubernetes")
    home = tmp_path / "home"
    monkeypatch.setenv("AI_PLATFORM_REPO", str(own_demo_repo))
    with running(load_platform(own_demo_repo, home=home), tmp_path, monkeypatch) as cluster:
        live_at_three(cluster)
        cluster.rollout(*shipped("2"))
        argv = ["rollout", "reap", MODEL, "--home", str(home), "--json"]
        assert main(argv) == 0
        assert json.loads(capsys.readouterr().out) == {"model": MODEL, "target": "kubernetes", "reaped": None}
        assert len(cluster.pod_names("blue")) == 3  # its window is open
        Records(cluster.platform.artifacts()).publish(replace(cluster.state(), idle_until=1.0), MODEL)  # long past
        assert main(argv) == 0
        assert json.loads(capsys.readouterr().out) == {"model": MODEL, "target": "kubernetes", "reaped": "blue"}
        assert cluster.pod_names("blue") == []
