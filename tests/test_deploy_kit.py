"""deploy/: the Helm values, the instance file and the Dockerfiles agree with the code they deploy."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT

from ai_platform.rollout import rbac

DEPLOY = ROOT / "deploy"


def test_run_pods_run_as_the_account_the_role_is_bound_to() -> None:
    values = yaml.safe_load((DEPLOY / "helm/dagster-values.yaml").read_text())
    instance = yaml.safe_load((DEPLOY / "dagster-instance.kubernetes.yaml").read_text())
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    assert launcher["runK8sConfig"]["podSpecConfig"]["serviceAccountName"] == rbac.NAME
    assert instance["run_launcher"]["config"]["service_account_name"] == rbac.NAME
    assert launcher["jobNamespace"] == instance["run_launcher"]["config"]["job_namespace"]
    limits = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"]
    assert limits == instance["run_coordinator"]["config"]["tag_concurrency_limits"]
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["--python-file", "definitions.py"]


def test_dockerfiles_install_the_locks_and_pin_their_bases() -> None:
    for name, lock in (("code-location", "platform"), ("quantize", "quantize")):
        text = (DEPLOY / f"docker/{name}.Dockerfile").read_text()
        (base,) = re.findall(r"^FROM (\S+)", text, flags=re.MULTILINE)
        assert not base.endswith(":latest") and re.search(r":\d", base), base  # a version, never latest
        assert f"requirements/{lock}.lock" in text and "--no-deps" in text
        assert (ROOT / f"requirements/{lock}.lock").is_file()
        assert "USER 10001" in text  # never root
