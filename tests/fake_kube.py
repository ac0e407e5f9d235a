"""A Kubernetes API server on 127.0.0.1 that keeps objects in memory (a stand-in for a cluster; none is here).

The real `kubernetes` client talks to it through a kubeconfig, so the code under test runs unchanged: discovery
(`/version`, `/api`, `/apis`, each group's resource list) for the dynamic client, server-side apply (PATCH with
`application/apply-patch+yaml`), GET of one object, and the pod list by label selector. One field manager
applies everything here, so an apply replaces the object's metadata and spec and keeps its status, which is
what server-side apply does for a sole manager (a field left out of the applied object is removed).

An apply the cluster would refuse under strict field validation (`k8s_schema.validate_strictly`: Kubernetes 1.35
and the pinned KEDA and Prometheus-operator CRDs) is answered 422, as the API server answers it.

Two controllers act on what is applied, as the cluster's would, at once:
- the Deployment controller: pods for `spec.replicas`, all of the current template (a changed template replaces
  every pod; a changed count adds or removes some), and a status that has rolled out (`observedGeneration`,
  `updatedReplicas`, `availableReplicas`); each new pod is given an address by `kubelet` (a port on 127.0.0.1,
  written into its vLLM container's `http` port, since every pod here shares one IP);
- KEDA: a ScaledObject with `autoscaling.keda.sh/paused-replicas: N` scales its target to N; an active one
  raises its target to `minReplicaCount` (the HPA's floor). Load-driven scaling is the test's (`scale`).

A DELETE removes the object, and the garbage collector follows at once: every object whose `ownerReferences`
name the deleted one's uid goes too (a Deployment's pods with it). A new object gets a `creationTimestamp`.

And a Job controller: a Job created (POST, validated strictly) gets one pod (labelled `job-name`, owned by the
Job), and the test says how it ends: `on_job` runs the pod (given the Job, on a thread of its own) and answers
(succeeded, log), or the test calls `finish_job` itself; until then the Job is active and its pod Running. The
Job's status then carries the Complete or Failed condition the real controller writes, its pod's phase
Succeeded or Failed, and `GET .../pods/NAME/log` serves the log (text/plain).

Every apply, delete and every pod started or deleted is kept in `events`, in order; every request (method and
path) in `calls`, so a test can say what a command read and wrote. A Deployment's `scale` subresource takes a merge
patch of `spec.replicas` (what `kubectl scale` and `rollout stop` send), as the HPA's `scale` does.
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
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from k8s_schema import SchemaError, validate_strictly
from threaded import in_thread

PAUSED = "autoscaling.keda.sh/paused-replicas"
RESOURCES = {  # group/version -> (plural, kind)
    "v1": [("services", "Service"), ("configmaps", "ConfigMap"), ("pods", "Pod")],
    "apps/v1": [("deployments", "Deployment")],
    "batch/v1": [("jobs", "Job"), ("cronjobs", "CronJob")],
    "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget")],
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
    calls: list[tuple[str, str]] = field(default_factory=list)  # (method, path) of every request, in order
    on_job: Callable[[dict[str, Any]], tuple[bool, str]] | None = None  # runs a Job's pod: (succeeded, its log)
    logs: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, pod) -> its log
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

    def add_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """A pod no Deployment owns (a run's step pod), as its Job's controller would have made it."""
        with self.lock:
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": {"ai-platform/role": "run"},
                             "uid": str(uuid.uuid4()), "creationTimestamp": self.timestamp(), "ownerDeployment": ""},
                "spec": {"containers": [{"name": "step", "image": "code@sha256:" + "0" * 64}]},
                "status": {"phase": "Running"},
            }  # fmt: skip
            self.objects[("pods", namespace, name)] = pod
            return pod

    def create_job(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """The Job stored, and its one pod started, as the Job controller does; `on_job` (if any) runs it."""
        with self.lock:
            job = copy.deepcopy(body)
            meta, name = job["metadata"], job["metadata"]["name"]
            meta.update(namespace=namespace, uid=str(uuid.uuid4()), creationTimestamp=self.timestamp(), generation=1)
            job["status"] = {"active": 1, "startTime": self.timestamp()}
            self.objects[("jobs", namespace, name)] = job
            template = job["spec"]["template"]
            pod_name = f"{name}-{uuid.uuid4().hex[:5]}"
            owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": meta["uid"], "controller": True}
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": {**template["metadata"].get("labels", {}), "job-name": name,
                               "batch.kubernetes.io/job-name": name},
                    "uid": str(uuid.uuid4()),
                    "creationTimestamp": self.timestamp(),
                    "ownerReferences": [owner],
                    "ownerDeployment": "",
                },
                "spec": copy.deepcopy(template["spec"]),
                "status": {"phase": "Running"},
            }  # fmt: skip
            self.objects[("pods", namespace, pod_name)] = pod
            self.events.append(("job created", name, pod_name))
        if self.on_job is not None:
            run = self.on_job

            def kubelet() -> None:
                succeeded, log = run(copy.deepcopy(job))
                self.finish_job(namespace, name, succeeded, log)

            threading.Thread(target=kubelet, daemon=True).start()
        return job

    def finish_job(self, namespace: str, name: str, succeeded: bool, log: str = "") -> None:
        """The Job's pod exited (0: `succeeded`) having written `log`: the statuses the controller writes."""
        with self.lock:
            job = self.objects[("jobs", namespace, name)]
            now = self.timestamp()
            if succeeded:
                conditions = [
                    {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                    {"type": "Complete", "status": "True", "lastTransitionTime": now},
                ]
                job["status"] = {"succeeded": 1, "startTime": job["status"]["startTime"], "completionTime": now}
            else:
                failed = {"status": "True", "reason": "BackoffLimitExceeded", "lastTransitionTime": now,
                          "message": "Job has reached the specified backoff limit"}  # fmt: skip
                conditions = [{"type": "FailureTarget", **failed}, {"type": "Failed", **failed}]
                job["status"] = {"failed": 1, "startTime": job["status"]["startTime"]}
            job["status"]["conditions"] = conditions
            for (plural, ns, pod_name), pod in self.objects.items():
                if plural == "pods" and ns == namespace and pod["metadata"]["labels"].get("job-name") == name:
                    pod["status"] = {"phase": "Succeeded" if succeeded else "Failed"}
                    self.logs[(namespace, pod_name)] = log
            self.events.append(("job finished", name, "succeeded" if succeeded else "failed"))

    @staticmethod
    def timestamp(age_s: float = 0.0) -> str:
        """A creationTimestamp `age_s` seconds ago, as the API server writes one."""
        return (datetime.now(UTC) - timedelta(seconds=age_s)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def delete(self, plural: str, namespace: str, name: str) -> bool:
        """The object deleted (False: there was none), then the garbage collector: its dependents, by uid."""
        with self.lock:
            return self._delete(plural, namespace, name)

    def _delete(self, plural: str, namespace: str, name: str) -> bool:
        found = self.objects.pop((plural, namespace, name), None)
        if found is None:
            return False
        self.events.append(("delete", found["kind"], name))
        if plural == "deployments":
            for pod in self.pods(namespace, name):
                self._delete_pod(pod)
        uid = found["metadata"]["uid"]
        for (kind, ns, other), obj in list(self.objects.items()):
            owners = obj["metadata"].get("ownerReferences") or []
            if ns == namespace and any(owner.get("uid") == uid for owner in owners):
                self._delete(kind, ns, other)
        return True

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
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"] if old else self.timestamp()
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
            kube.calls.append(("GET", path))
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
                if rest[2:3] == ["pods"] and rest[4:] == ["log"]:
                    self._log(rest[1], rest[3])
                    return
                if len(rest) == 5 and rest[4] == "status":  # a Job's status subresource: the Job as it is
                    rest = rest[:4]
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

        def _log(self, namespace: str, name: str) -> None:
            if kube.get("pods", namespace, name) is None:
                self._not_found(f"pods/{name}/log")
                return
            data = kube.logs.get((namespace, name), "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            """A create; Jobs only here (everything else of ours is applied server-side)."""
            kube.calls.append(("POST", urlsplit(self.path).path))
            _, rest, _ = self._route()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if rest[2:] != ["jobs"]:
                self._send(405, {"kind": "Status", "code": 405, "message": f"no create of {rest[2:]} here"})
                return
            try:
                validate_strictly(body)
            except SchemaError as exc:
                self._send(422, {"kind": "Status", "code": 422, "reason": "Invalid", "message": str(exc)})
                return
            if kube.get("jobs", rest[1], body["metadata"]["name"]) is not None:
                self._send(409, {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "exists"})
                return
            self._send(201, _public(kube.create_job(rest[1], body)))

        def do_PATCH(self) -> None:
            kube.calls.append(("PATCH", urlsplit(self.path).path))
            _, rest, _ = self._route()
            if rest[2:3] == ["deployments"] and rest[4:] == ["scale"]:
                self._scale(rest[1], rest[3])
                return
            if self.headers.get("Content-Type") != "application/apply-patch+yaml":
                self._send(415, {"kind": "Status", "code": 415, "message": "only server-side apply here"})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            _, rest, query = self._route()
            assert query.get("fieldManager") and query["force"][0].lower() == "true", query  # the client sends True
            try:  # what a cluster with the CRDs refuses under strict field validation (kubectl's default)
                validate_strictly(body)
            except SchemaError as exc:
                self._send(422, {"kind": "Status", "code": 422, "reason": "Invalid", "message": str(exc)})
                return
            self._send(200, _public(kube.apply(rest[2], rest[1], rest[3], body)))

        def do_DELETE(self) -> None:
            kube.calls.append(("DELETE", urlsplit(self.path).path))
            self.rfile.read(int(self.headers.get("Content-Length", 0)))  # DeleteOptions: the defaults here
            _, rest, _ = self._route()
            if len(rest) != 4 or not kube.delete(rest[2], rest[1], rest[3]):
                self._not_found(urlsplit(self.path).path)
                return
            self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200})

        def _scale(self, namespace: str, name: str) -> None:
            kind = self.headers.get("Content-Type")
            if kind not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                self._send(415, {"kind": "Status", "code": 415, "message": f"scale: no {kind} here"})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if kube.get("deployments", namespace, name) is None:
                self._not_found(f"deployments/{name}/scale")
                return
            replicas = int(body["spec"]["replicas"])
            kube.scale(namespace, name, replicas)
            scale = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": name, "namespace": namespace},
            }
            self._send(200, {**scale, "spec": {"replicas": replicas}, "status": {"replicas": replicas}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    kube.url = f"http://127.0.0.1:{server.server_address[1]}"
    with in_thread(server):
        yield kube


def kubeconfig(kube: FakeKube, path: Path) -> Path:
    """A kubeconfig naming the stand-in (plain HTTP on loopback, a token it does not check)."""
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{kube.url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]\n"
    )
    return path
