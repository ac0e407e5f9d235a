"""The RBAC the run pods need: a ServiceAccount, and a Role with exactly the verbs on exactly the kinds they touch.

A run pod (and each step pod the k8s_job_executor starts from it) executes the assets, which make these calls:
- ours (`rollout/kubernetes.py`): a server-side apply (`create` when the object is new, else `patch`) of every
  object a rollout or the canary renders, a `delete` of the canary's own Deployment and Service, and a `get` of a
  Deployment's status while waiting for it to roll out;
- dagster-k8s's, which our code calls: k8s_job_executor (a Job per step, its status, its pods and events) and
  PipesK8sClient (the quantize workload's pod and its log, where the Pipes messages travel).

`tests/test_rbac.py` lists every Kubernetes API call in that code and holds this table to exactly those.
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import Platform

NAME = "ai-platform-run"

# (API group, resource, verbs)
RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("apps", "deployments", ("create", "delete", "get", "patch")),
    ("", "services", ("create", "delete", "patch")),
    ("", "configmaps", ("create", "patch")),
    ("keda.sh", "scaledobjects", ("create", "patch")),
    ("networking.k8s.io", "networkpolicies", ("create", "patch")),
    ("monitoring.coreos.com", "podmonitors", ("create", "patch")),
    ("monitoring.coreos.com", "prometheusrules", ("create", "patch")),
    ("batch", "jobs", ("create", "delete", "list")),
    ("batch", "jobs/status", ("get",)),
    ("", "pods", ("create", "delete", "get", "list")),
    ("", "pods/log", ("get",)),
    ("", "events", ("list",)),
)


def manifests(platform: Platform) -> list[dict[str, Any]]:
    """ServiceAccount, Role and RoleBinding in the platform's namespace; the Dagster chart's run launcher names the
    account (`deploy/helm/dagster-values.yaml`), so run and step pods run as it. The GPU workload pods need none."""
    namespace, name = platform.config.kubernetes.namespace, NAME
    meta = {"namespace": namespace, "labels": {"app.kubernetes.io/part-of": "ai-platform"}}
    rules = [{"apiGroups": [group], "resources": [resource], "verbs": list(verbs)} for group, resource, verbs in RULES]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, **meta}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": NAME, **meta},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": NAME, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
    ]
