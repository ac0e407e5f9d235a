"""docs/kubernetes.md, walked as an operator would walk it, holds to the kit (issue 31's acceptance).

The walk (tests/docs_walk.py, whose docstring is the contract the docs follow) reads the docs' platform.yaml and
every shell command, runs each `ai-platform` command that works without a cluster against a platform repo made from
that platform.yaml and an empty home, and checks every other command by what it references. Each test below is
one check over the whole walk, and names the doc line of every command at fault.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from docs_walk import CHART_SCHEMAS, NAMED_KINDS, Doc, Manifest, Ref, Walk, values_validator, walk_docs

KUBERNETES = "1.35.0"


@pytest.fixture(scope="module")
def walk(demo_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Walk:
    from ai_platform.platform_repo import git

    def make_repo(path: Path, platform_yaml: str) -> None:
        git(path.parent, "clone", "--quiet", str(demo_repo), str(path))
        git(path, "config", "user.name", "test")
        git(path, "config", "user.email", "test@example.invalid")
        (path / "platform.yaml").write_text(platform_yaml)
        git(path, "commit", "--quiet", "--no-gpg-sign", "-am", "platform.yaml from docs/kubernetes.md")

    return walk_docs(Doc.read(), tmp_path_factory.mktemp("docs-walk"), make_repo)


def report(problems: list[str]) -> str:
    return "\n" + "\n".join(problems)


def is_core(manifest: Manifest) -> bool:
    try:
        kubernetes_validate.validate(
            {"apiVersion": manifest.body["apiVersion"], "kind": manifest.body["kind"]}, KUBERNETES
        )
    except kubernetes_validate.SchemaNotFoundError:
        return False
    except kubernetes_validate.ValidationError:
        return True
    return True


def test_the_docs_show_a_platform_yaml_and_commands_to_walk(walk: Walk) -> None:
    """The structure the walk relies on is there: a platform.yaml block, and at least one render command whose
    manifests the rest of the checks see."""
    assert walk.platform, "the platform.yaml block is empty"
    programs = {c.argv[0] for c in walk.commands}
    assert {"ai-platform", "kubectl", "helm"} <= programs, programs
    assert walk.manifests, "no command of the docs wrote a manifest: " + report(walk.command_errors)


def test_placeholders_are_only_the_documented_ones(walk: Walk) -> None:
    """A `…` the walk resolves is a digest of an image the docs build; anything else would have to be guessed."""
    assert not walk.placeholder_errors, report(walk.placeholder_errors)


def test_every_command_is_one_the_walk_checks(walk: Walk) -> None:
    assert not walk.unknown, report(walk.unknown)


def test_the_docs_platform_yaml_validates(walk: Walk) -> None:
    """platform.yaml as the docs show it is a valid config for the kubernetes target (`ai-platform config validate`,
    what the docs say checks it)."""
    import subprocess

    from docs_walk import CLI, _environment

    done = subprocess.run(
        [str(CLI), "config", "validate", "platform"],
        cwd=walk.scratch,
        env=_environment(walk.scratch),
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = walk.doc.platform_yaml().line
    assert done.returncode == 0, f"docs/kubernetes.md:{line} (platform.yaml): {done.stderr.strip()}"
    assert "kubernetes target" in done.stdout, done.stdout


def test_every_ai_platform_command_succeeds(walk: Walk) -> None:
    assert not walk.command_errors, report(walk.command_errors)


def test_every_reference_of_a_command_exists(walk: Walk) -> None:
    """`kubectl apply -f` what a command wrote (or the checkout has), `--from-file` a file that exists by then,
    `docker build -f` a Dockerfile of the checkout, `helm -f` a values file, a chart repo added first, a cluster
    command's model one of the repo's."""
    assert not walk.reference_errors, report(walk.reference_errors)


def test_every_rendered_core_object_validates_strictly(walk: Walk) -> None:
    problems = []
    for manifest in walk.manifests:
        if not is_core(manifest):
            continue
        try:
            kubernetes_validate.validate(manifest.body, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            problems.append(f"{manifest}: {where}: {exc.message[:300]}")
    assert not problems, report(problems)


def test_every_rendered_custom_resource_validates_against_its_crd(walk: Walk) -> None:
    """KEDA and Prometheus-operator kinds against their projects' CRD schemas, pinned in tests/crds/."""
    custom = [m for m in walk.manifests if not is_core(m)]
    if not custom:
        return
    from k8s_schema import validate_strictly  # tests/k8s_schema.py: the pinned CRDs (helper `monitor`'s)

    problems = []
    for manifest in custom:
        try:
            validate_strictly(manifest.body)
        except Exception as exc:  # its SchemaError, or a kind no pinned CRD covers
            problems.append(f"{manifest}: {exc}")
    assert not problems, report(problems)


def test_every_named_object_is_rendered_created_or_a_prerequisite(walk: Walk) -> None:
    """Every Secret, ConfigMap, claim, ServiceAccount and Namespace that a rendered object, the Helm values or the
    Dagster instance names exists on the walk's cluster: rendered, created by a kubectl command, created by a chart
    the docs install, or listed under the docs' "Prerequisites" heading as `Kind/name`."""
    listed = walk.doc.prerequisites(walk.namespace)
    missing = []
    for ref, by in sorted(walk.named.items(), key=lambda item: str(item[0])):
        if ref in walk.created or ref in listed or (ref.kind == "Namespace" and ref.name == "default"):
            continue
        missing.append(f"{ref}: named by {'; '.join(sorted(set(by))[:3])}; neither rendered, created nor listed")
    assert not missing, report(missing)


def test_nothing_is_created_twice(walk: Walk) -> None:
    """An object two steps create fails the second: `kubectl create` answers AlreadyExists, and Helm refuses an
    object it does not own (one a kubectl command made)."""

    def source(by: str) -> str:  # a rendered file and the `kubectl apply` of it are one object, applied again
        return "declarative" if by.startswith("rendered") or "`kubectl apply" in by else by

    twice = [
        f"{ref}: {' and '.join(by)}"
        for ref, by in sorted(walk.created.items(), key=lambda item: str(item[0]))
        if len({source(b) for b in by}) > 1
    ]
    assert not twice, report(twice)


def test_no_prerequisite_or_created_object_goes_unused(walk: Walk) -> None:
    """A prerequisite nothing names, or a Secret/ConfigMap a command creates that nothing names, is a stale
    instruction (a renamed secret, a key the kit stopped reading)."""
    listed = walk.doc.prerequisites(walk.namespace)
    stale = [
        f"docs/kubernetes.md:{line}: prerequisite {ref} is named by no rendered object, values or instance file"
        for ref, line in listed.items()
        if ref.kind in NAMED_KINDS and ref not in walk.named
    ]
    stale += [
        f"{ref}: created by {by[0]} but named by nothing"
        for ref, by in walk.created.items()
        if ref.kind in ("Secret", "ConfigMap") and ref not in walk.named and not by[0].startswith(("rendered", "the "))
    ]
    assert not stale, report(stale)


def test_helm_values_validate_against_the_charts_pinned_schema(walk: Walk) -> None:
    """Each `helm ... -f V` of a chart whose values schema is pinned (tests/schemas/SOURCES.md): V's keys are ones
    the schema knows, with the types it gives (see `values_validator` for how an override is checked)."""
    assert any(c.argv[0] == "helm" for c in walk.commands), "the docs install no chart"
    assert not walk.values_errors, report(walk.values_errors)


def test_the_values_check_catches_an_unknown_key_and_a_wrong_type() -> None:
    """The values check can fail: a misspelt key where the schema is closed, a Kubernetes field of the wrong type
    under a ref resolved against the 1.35 definitions, an envSecrets item Kubernetes' SecretEnvSource does not
    allow."""
    from docs_walk import ROOT

    (chart,) = CHART_SCHEMAS
    validator = values_validator(chart)
    values = yaml.safe_load((ROOT / "deploy/helm/dagster-values.yaml").read_text())
    assert not list(validator.iter_errors(values))
    bad = yaml.safe_load((ROOT / "deploy/helm/dagster-values.yaml").read_text())
    bad["runLauncher"]["config"]["k8sRunLauncher"]["jobNamepsace"] = "ai-platform"
    secrets = bad["dagster-user-deployments"]["deployments"][0]["envSecrets"]
    secrets.append({"name": "x", "key": "y"})
    bad["dagster-user-deployments"]["deployments"][0]["nodeSelector"] = {"pool": 3}
    paths = {".".join(str(p) for p in e.absolute_path) for e in validator.iter_errors(bad)}
    assert "runLauncher.config.k8sRunLauncher" in paths, paths
    assert f"dagster-user-deployments.deployments.0.envSecrets.{len(secrets) - 1}" in paths, paths
    assert "dagster-user-deployments.deployments.0.nodeSelector.pool" in paths, paths


def test_the_walk_reads_the_docs_conventions(tmp_path: Path) -> None:
    """The parsing the checks rest on: continuations joined, comments dropped, prerequisites read only under their
    heading, the image digest rule."""
    text = (
        "# T\n\n## 1. What the cluster needs\n\n### Prerequisites\n\n"
        "- `Secret/pull` (`dockerconfigjson`) and `pvc/lake -n data`\n- `kubernetes.gpu.image` is not one\n\n"
        "## 2. platform.yaml\n\n```yaml\nname: x\n```\n\n"
        "Outside the list: `Secret/not-a-prerequisite`.\n\n"
        "```sh\ndocker build -f deploy/docker/quantize.Dockerfile -t r.example/q:1 .   # builds\n"
        "ai-platform x --image r.example/q@sha256:… \\\n  --other r.example/m@sha256:…\n```\n"
    )
    (tmp_path / "k.md").write_text(text)
    doc = Doc.read(tmp_path / "k.md")
    assert doc.prerequisites("ns") == {
        Ref("Secret", "ns", "pull"): 7,
        Ref("PersistentVolumeClaim", "data", "lake"): 7,
    }
    assert doc.platform_yaml().text == "name: x\n"
    first, second = doc.commands()
    assert first.argv[-1] == "." and "builds" not in first.argv and first.line == 19
    assert second.line == 20 and second.argv[-1] == "r.example/m@sha256:…"
    from docs_walk import _substitute

    errors: list[str] = []
    out = _substitute(second.text, "here", {"r.example/q"}, errors)
    assert "r.example/q@sha256:5a5a" in out
    assert len(errors) == 1 and "r.example/m@sha256:…" in errors[0]


SYNTHETIC = """# K

## 1. What the cluster needs

### Prerequisites

- `Secret/ai-platform-vllm`: vLLM's API key
- `Secret/never-named`

## 2. platform.yaml

```yaml
{platform}
```

## 3. Steps

```sh
kubectl create namespace ai-platform
docker build -f deploy/docker/code-location.Dockerfile -t registry.example.com/code:1 .
ai-platform rollout render contract-reviewer --repo ./platform --out rendered/ --bundle "" \\
  --image registry.example.com/model@sha256:… --gateway-image registry.example.com/code@sha256:…
kubectl apply -f rendered/no-such.yaml
kubectl -n ai-platform create configmap ai-platform-dashboard --from-literal=a=b
frobnicate --all
```
"""


def test_a_walk_over_docs_that_break_the_rules_reports_each_break(demo_repo: Path, tmp_path: Path) -> None:
    """Each check of the walk fails where it should, on a small doc that breaks one rule per command."""
    from ai_platform.platform_repo import git

    config = yaml.safe_load((demo_repo / "platform.yaml").read_text())
    config["execution"] = {"target": "kubernetes"}
    config["kubernetes"]["gpu"]["quantize_image"] = "registry.example.com/code@sha256:…"
    doc = tmp_path / "kubernetes.md"
    doc.write_text(SYNTHETIC.replace("{platform}", yaml.safe_dump(config, sort_keys=False, allow_unicode=True).strip()))

    def make_repo(path: Path, platform_yaml: str) -> None:
        git(path.parent, "clone", "--quiet", str(demo_repo), str(path))
        git(path, "config", "user.name", "test")
        git(path, "config", "user.email", "test@example.invalid")
        (path / "platform.yaml").write_text(platform_yaml)
        git(path, "commit", "--quiet", "--no-gpg-sign", "-am", "synthetic")

    walk = walk_docs(Doc.read(doc), tmp_path / "walk", make_repo)
    lines = doc.read_text().splitlines()

    def line_of(text: str) -> str:
        return f":{next(n for n, line in enumerate(lines, start=1) if text in line)}:"

    assert not walk.command_errors and len(walk.manifests) > 10  # the render ran, with the built image's digest
    (placeholder,) = walk.placeholder_errors
    assert line_of("ai-platform rollout render") in placeholder and "registry.example.com/model@sha256:…" in placeholder
    (reference,) = walk.reference_errors
    assert line_of("no-such.yaml") in reference and "rendered/no-such.yaml" in reference
    (unknown,) = walk.unknown
    assert line_of("frobnicate") in unknown and "frobnicate" in unknown
    dashboard = walk.created[Ref("ConfigMap", "ai-platform", "ai-platform-dashboard")]
    assert len(dashboard) == 2 and dashboard[0].startswith("rendered")  # the render and `kubectl create`: twice
    named = set(walk.named)
    assert Ref("Secret", "ai-platform", "ai-platform-vllm") in named  # listed, so not missing
    listed = walk.doc.prerequisites(walk.namespace)
    missing = {r for r in named if r not in walk.created and r not in listed}
    assert Ref("Secret", "ai-platform", "ai-platform-registry") in missing
    assert Ref("Secret", "ai-platform", "ai-platform-vllm") not in missing
    assert Ref("Secret", "ai-platform", "never-named") in set(listed) - named  # a stale prerequisite
