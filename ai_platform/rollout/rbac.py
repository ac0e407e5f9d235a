"""The RBAC the run pods need: a ServiceAccount, and a Role with exactly the verbs on exactly the kinds they touch.

A run pod (and each step pod the k8s_job_executor starts from it) executes the assets, which make these calls:
- ours (`rollout/kubernetes.py`): a server-side apply (`create` when the object is new, else `patch`) of every
  object a rollout or the canary renders, a `delete` of the canary's own Deployment and Service, and a `get` of a
  Deployment's status while waiting for it to roll out; before a canary, a `list` of the model's canary
  Deployments and Services and a `get` of the pods that own them (a killed run's are deleted), and a `get` of the
  step's own pod (its canary's owner);
- dagster-k8s's, which our code calls: k8s_job_executor (a Job per step, its status, its pods and events) and
  PipesK8sClient (the quantize workload's pod and its log, where the Pipes messages travel);
- the operator commands the kit's operator pods run as this account (`rollout/operator.py`): a rollback's Job
  (`rollout rollback --here`: a switch), the reap CronJob (`rollout reap --all`: a ScaledObject applied), and
  `rollout stop` where one runs it in the cluster (each colour's Deployment `scale` patched to 0).

The operator's own Role (`OPERATOR_RULES`, `ai-platform-operator`): what `rollout status`, `stop`, `reap` and
`rollback` call from an operator's machine, where a rollback only submits its Job and reads its pod's log. The kit
renders the Role; the operator binds it to their own user or group (docs/kubernetes.md, section 8).

`tests/test_rbac.py` lists every Kubernetes API call in that code and holds this table to exactly those.
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import Platform

NAME = "ai-platform-run"

# (API group, resource, verbs)
RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("apps", "deployments", ("create", "delete", "get", "list", "patch")),
    ("apps", "deployments/scale", ("patch",)),
    ("", "services", ("create", "delete", "list", "patch")),
    ("", "configmaps", ("create", "patch")),
    ("keda.sh", "scaledobjects", ("create", "patch")),
    ("networking.k8s.io", "networkpolicies", ("create", "patch")),
    ("policy", "poddisruptionbudgets", ("create", "patch")),
    ("monitoring.coreos.com", "podmonitors", ("create", "patch")),
    ("monitoring.coreos.com", "prometheusrules", ("create", "patch")),
    ("batch", "jobs", ("create", "delete", "list")),
    ("batch", "jobs/status", ("get",)),
    ("", "pods", ("create", "delete", "get", "list")),
    ("", "pods/log", ("get",)),
    ("", "events", ("list",)),
)

OPERATOR = "ai-platform-operator"
OPERATOR_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("apps", "deployments", ("get",)),  # status: each colour's replicas; stop: is the colour there
    ("apps", "deployments/scale", ("patch",)),  # stop
    ("keda.sh", "scaledobjects", ("create", "patch")),  # stop, reap: a colour's ScaledObject paused
    ("batch", "jobs", ("create",)),  # rollback: its Job
    ("batch", "jobs/status", ("get",)),  # rollback: until it is done
    ("", "pods", ("list",)),  # rollback: the Job's pod
    ("", "pods/log", ("get",)),  # rollback: its log
)


def rules(table: tuple[tuple[str, str, tuple[str, ...]], ...]) -> list[dict[str, Any]]:
    return [{"apiGroups": [group], "resources": [resource], "verbs": list(verbs)} for group, resource, verbs in table]


def manifests(platform: Platform) -> list[dict[str, Any]]:
    """ServiceAccount, Role and RoleBinding in the platform's namespace; the Dagster chart's run launcher names the
    account (`deploy/helm/dagster-values.yaml`), so run and step pods run as it, and so do the kit's operator pods.
    The GPU workload pods need none. Then the operator's Role, unbound."""
    namespace, name = platform.config.kubernetes.namespace, NAME
    meta = {"namespace": namespace, "labels": {"app.kubernetes.io/part-of": "ai-platform"}}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, **meta}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": NAME, **meta},
            "rules": rules(RULES),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": NAME, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
        {  # bound by the operator to their own user or group (docs/kubernetes.md, section 8)
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": OPERATOR, **meta},
            "rules": rules(OPERATOR_RULES),
        },
    ]
