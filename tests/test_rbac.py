"""The run pods' Role grants exactly the Kubernetes API calls the code makes: every call is listed here from
the code itself (our dynamic-client applies and deletes, and every typed API method called in ai_platform,
assets and the dagster-k8s modules our code drives), and the Role is held to that set, no more, no less."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dagster_k8s
import kubernetes_validate
from conftest import MODEL, ROOT

from ai_platform.config import load_platform
from ai_platform.rollout import rbac
from ai_platform.rollout.kubernetes import canary_manifests, render, switch

DIGEST = "sha256:" + "ab" * 32
TYPED = re.compile(r"^(create|read|list|delete|patch|replace)_namespaced_([a-z]+?)(_status|_log|_scale)?$")
VERB = {"read": "get", "replace": "update"}
# The dagster-k8s modules our code drives: PipesK8sClient (assets/execution.py), k8s_job_executor's client
LIBRARY = [Path(dagster_k8s.__file__).parent / name for name in ("pipes.py", "client.py")]


def typed_calls(paths: list[Path]) -> set[tuple[str, str, str]]:
    """(group, resource, verb) for every typed client method called (`read_namespaced_deployment`, ...)."""
    groups = {"deployment": "apps", "job": "batch"}
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and (match := TYPED.match(node.attr)):
                verb, kind, sub = match.groups()
                resource = f"{kind}s" + (f"/{sub[1:]}" if sub else "")
                found.add((groups.get(kind, ""), resource, VERB.get(verb, verb)))
    return found


def dynamic_calls(demo_repo: Path) -> set[tuple[str, str, str]]:
    """What `_apply` (server-side apply: create or patch) and `_delete` touch: every object a rollout, its
    retirement of the old colour and the canary apply, and the canary's objects, which it deletes."""
    platform = load_platform(demo_repo)
    spec = platform.model(MODEL)
    ref = f"registry.example.com/ml/{MODEL}@{DIGEST}"
    plan = switch(platform, spec, ref, DIGEST, color="green", old="blue")
    applied = [
        *plan.start,
        plan.route,
        *plan.release,
        *plan.retire,
        *render(platform, spec, ref, DIGEST, "blue", "blue"),
    ]
    canary = canary_manifests(platform, spec, ref, DIGEST)

    def key(manifest: dict) -> tuple[str, str]:
        group, kind = manifest["apiVersion"].rpartition("/")[0], manifest["kind"].lower()
        return group, f"{kind[:-1]}ies" if kind.endswith("y") else f"{kind}s"  # NetworkPolicy: networkpolicies

    calls = {(*key(m), verb) for m in [*applied, *canary] for verb in ("create", "patch")}
    return calls | {(*key(m), "delete") for m in canary}


def test_the_code_calls_only_what_this_test_knows_how_to_list() -> None:
    """Every Kubernetes call in our code goes through `_apply`, `_delete` or a typed method: a new kind of call
    would escape the lists below, so it must fail here first."""
    source = (ROOT / "ai_platform/rollout/kubernetes.py").read_text(encoding="utf-8")
    dynamic = re.findall(r"resource\.(\w+)\(", source)
    assert sorted(set(dynamic)) == ["delete", "server_side_apply"], dynamic


def test_the_role_grants_exactly_the_calls_the_code_makes(demo_repo: Path) -> None:
    ours = sorted(p for d in ("ai_platform", "assets") for p in (ROOT / d).rglob("*.py"))
    expected = dynamic_calls(demo_repo) | typed_calls(ours) | typed_calls(LIBRARY)
    granted = {(group, resource, verb) for group, resource, verbs in rbac.RULES for verb in verbs}
    assert granted - expected == set(), "granted but never called"
    assert expected - granted == set(), "called but not granted"


def test_the_rbac_objects_validate(demo_repo: Path) -> None:
    for manifest in rbac.manifests(load_platform(demo_repo)):
        kubernetes_validate.validate(manifest, "1.35.0", strict=True)
