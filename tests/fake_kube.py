"""A Kubernetes API server on 127.0.0.1 that keeps objects in memory (a stand-in for a cluster; none is here).

The real `kubernetes` client talks to it through a kubeconfig, so the code under test runs unchanged: discovery
(`/version`, `/api`, `/apis`, each group's resource list) for the dynamic client, server-side apply (PATCH with
`application/apply-patch+yaml`), GET of one object, and the pod list by label selector. One field manager
applies everything here, so an apply replaces the object's metadata and spec and keeps its status, which is
what server-side apply does for a sole manager (a field left out of the applied object is removed).

Two controllers act on what is applied, as the cluster's would, at once:
- the Deployment controller: pods for `spec.replicas`, all of the current template (a changed template replaces
  every pod; a changed count adds or removes some), and a status that has rolled out (`observedGeneration`,
  `updatedReplicas`, `availableReplicas`); each new pod is given an address by `kubelet` (a port on 127.0.0.1,
  written into its vLLM container's `http` port, since every pod here shares one IP);
- KEDA: a ScaledObject with `autoscaling.keda.sh/paused-replicas: N` scales its target to N; an active one
  raises its target to `minReplicaCount` (the HPA's floor). Load-driven scaling is the test's (`scale`).

Every apply and every pod started or deleted is kept in `events`, in order.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PAUSED = "autoscaling.keda.sh/paused-replicas"
RESOURCES = {  # group/version -> (plural, kind)
    "v1": [("services", "Service"), ("configmaps", "ConfigMap"), ("pods", "Pod")],
    "apps/v1": [("deployments", "Deployment")],
    "networking.k8s.io/v1": [("networkpolicies", "NetworkPolicy")],
    "keda.sh/v1alpha1": [("scaledobjects", "ScaledObject")],
    "monitoring.coreos.com/v1": [("podmonitors", "PodMonitor"), ("prometheusrules", "PrometheusRule")],
}


@dataclass
class FakeKube:
    kubelet: Callable[[dict[str, Any]], int]  # a new pod's port on 127.0.0.1
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)  # (plural, ns, name)
    events: list[tuple[str, ...]] = field(default_factory=list)
    on_apply: Callable[[dict[str, Any]], None] | None = None  # called before an apply takes effect
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((plural, namespace, name))

    def pods(self, namespace: str, deployment: str) -> list[dict[str, Any]]:
        return [
            o
            for (plural, ns, _), o in sorted(self.objects.items())
            if plural == "pods" and ns == namespace and o["metadata"]["ownerDeployment"] == deployment
        ]

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        """What the HPA does under load: the Deployment's `spec.replicas` set through its scale subresource."""
        with self.lock:
            found = self.objects[("deployments", namespace, name)]
            found["spec"]["replicas"] = replicas
            found["metadata"]["generation"] += 1
            self._reconcile(found)

    # ---------------------------------------------------------------- what the API server does

    def apply(self, plural: str, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.on_apply:
            self.on_apply(body)
        with self.lock:
            old = self.objects.get((plural, namespace, name))
            new = copy.deepcopy(body)
            meta = new["metadata"]
            meta.setdefault("namespace", namespace)
            meta["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
            changed = old is None or old.get("spec") != new.get("spec")
            meta["generation"] = (old["metadata"]["generation"] if old else 0) + (1 if changed else 0)
            new["status"] = old.get("status", {}) if old else {}
            self.objects[(plural, namespace, name)] = new
            self.events.append(("apply", new["kind"], name))
            if plural == "deployments":
                self._reconcile(new)
            elif plural == "scaledobjects":
                self._keda(new)
            return new

    def _keda(self, scaled: dict[str, Any]) -> None:
        target = self.objects.get(
            ("deployments", scaled["metadata"]["namespace"], scaled["spec"]["scaleTargetRef"]["name"])
        )
        if target is None:
            return
        paused = (scaled["metadata"].get("annotations") or {}).get(PAUSED)
        wanted = (
            int(paused) if paused is not None else max(target["spec"]["replicas"], scaled["spec"]["minReplicaCount"])
        )
        if wanted != target["spec"]["replicas"]:
            target["spec"]["replicas"] = wanted
            target["metadata"]["generation"] += 1
            self._reconcile(target)

    def _reconcile(self, deployment: dict[str, Any]) -> None:
        ns, name = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        template = deployment["spec"]["template"]
        digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
        pods = self.pods(ns, name)
        for pod in pods:
            if pod["metadata"]["labels"]["pod-template-hash"] != digest:
                self._delete_pod(pod)
        current = [p for p in self.pods(ns, name) if p["metadata"]["labels"]["pod-template-hash"] == digest]
        want = deployment["spec"]["replicas"]
        for pod in current[want:]:
            self._delete_pod(pod)
        for _ in range(want - len(current)):
            self._start_pod(deployment, digest)
        deployment["status"] = {
            k: v
            for k, v in {
                "observedGeneration": deployment["metadata"]["generation"],
                "replicas": want,
                "updatedReplicas": want,
                "readyReplicas": want,
                "availableReplicas": want,
            }.items()
            if v
        }

    def _start_pod(self, deployment: dict[str, Any], digest: str) -> None:
        ns = deployment["metadata"]["namespace"]
        name = f"{deployment['metadata']['name']}-{digest}-{uuid.uuid4().hex[:5]}"
        spec = copy.deepcopy(deployment["spec"]["template"]["spec"])
        labels = {**deployment["spec"]["template"]["metadata"]["labels"], "pod-template-hash": digest}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels, "uid": str(uuid.uuid4())},
            "spec": spec,
            "status": {"phase": "Running", "podIP": "127.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        port = self.kubelet(pod)
        for container in spec["containers"]:
            for declared in container.get("ports", []):
                if declared.get("name") == "http":
                    declared["containerPort"] = port
        self.objects[("pods", ns, name)] = pod
        pod["metadata"]["ownerDeployment"] = deployment["metadata"]["name"]
        self.events.append(("pod started", deployment["metadata"]["name"], name))

    def _delete_pod(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        del self.objects[("pods", meta["namespace"], meta["name"])]
        self.events.append(("pod deleted", meta["ownerDeployment"], meta["name"]))


def _resource_list(group_version: str) -> dict[str, Any]:
    resources = [
        {"name": plural, "singularName": kind.lower(), "namespaced": True, "kind": kind,
         "verbs": ["create", "delete", "get", "list", "patch", "update"]}
        for plural, kind in RESOURCES[group_version]
    ]  # fmt: skip
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def _groups() -> dict[str, Any]:
    groups = []
    for group_version in RESOURCES:
        if "/" in group_version:
            group, version = group_version.split("/")
            entry = {"groupVersion": group_version, "version": version}
            groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _matches(labels: dict[str, str], selector: str) -> bool:
    pairs = [term.split("=", 1) for term in selector.split(",") if term]
    return all(labels.get(k) == v for k, v in pairs)


def _public(obj: dict[str, Any]) -> dict[str, Any]:
    shown = copy.deepcopy(obj)
    shown["metadata"].pop("ownerDeployment", None)
    return shown


@contextmanager
def serving(kube: FakeKube) -> Iterator[FakeKube]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self, what: str) -> None:
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
            self._send(404, {**status, "message": f"{what} not found"})

        def _route(self) -> tuple[str, list[str], dict[str, list[str]]]:
            url = urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            if parts[:1] == ["api"]:
                return "v1", parts[2:], parse_qs(url.query)
            return "/".join(parts[1:3]), parts[3:], parse_qs(url.query)

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/version":
                self._send(200, {"major": "1", "minor": "35", "gitVersion": "v1.35.0"})
            elif path == "/api":
                self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
            elif path == "/apis":
                self._send(200, _groups())
            elif path == "/api/v1" or (path.startswith("/apis/") and path.count("/") == 3):
                self._send(200, _resource_list(path.removeprefix("/api/").removeprefix("/apis/")))
            else:
                group_version, rest, query = self._route()
                with kube.lock:
                    if len(rest) == 3:  # namespaces/NS/PLURAL: a list
                        selector = query.get("labelSelector", [""])[0]
                        items = [
                            _public(o)
                            for (plural, ns, _), o in sorted(kube.objects.items())
                            if plural == rest[2]
                            and ns == rest[1]
                            and _matches(o["metadata"].get("labels", {}), selector)
                        ]
                        kind = dict(RESOURCES[group_version])[rest[2]]
                        self._send(
                            200, {"kind": f"{kind}List", "apiVersion": group_version, "metadata": {}, "items": items}
                        )
                        return
                    found = kube.get(rest[2], rest[1], rest[3]) if len(rest) == 4 else None
                    if found is None:
                        self._not_found(path)
                    else:
                        self._send(200, _public(found))

        def do_PATCH(self) -> None:
            if self.headers.get("Content-Type") != "application/apply-patch+yaml":
                self._send(415, {"kind": "Status", "code": 415, "message": "only server-side apply here"})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            _, rest, query = self._route()
            assert query.get("fieldManager") and query["force"][0].lower() == "true", query  # the client sends True
            self._send(200, _public(kube.apply(rest[2], rest[1], rest[3], body)))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    kube.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield kube
    finally:
        server.shutdown()
        server.server_close()


def kubeconfig(kube: FakeKube, path: Path) -> Path:
    """A kubeconfig naming the stand-in (plain HTTP on loopback, a token it does not check)."""
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{kube.url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]\n"
    )
    return path
