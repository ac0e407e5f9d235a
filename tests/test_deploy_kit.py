"""deploy/: the Helm values, the instance file and the Dockerfiles agree with the code they deploy."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT

from ai_platform.rollout import rbac
from ai_platform.rollout.kubernetes import RUN_POD

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


def test_the_instance_file_is_the_instance_the_chart_makes() -> None:
    """deploy/dagster-instance.kubernetes.yaml says it is the same instance as the chart's values: the run pods'
    label (vLLM's NetworkPolicy admits them), their CPU pool, and the PostgreSQL the chart's instance names."""
    values = yaml.safe_load((DEPLOY / "helm/dagster-values.yaml").read_text())
    instance = yaml.safe_load((DEPLOY / "dagster-instance.kubernetes.yaml").read_text())
    launcher = instance["run_launcher"]["config"]
    run = values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]
    assert launcher["run_k8s_config"]["pod_template_spec_metadata"] == run["podTemplateSpecMetadata"]
    assert run["podTemplateSpecMetadata"]["labels"] == RUN_POD
    assert launcher["run_k8s_config"]["pod_spec_config"]["node_selector"] == run["podSpecConfig"]["nodeSelector"]
    # the chart's instance (templates/helpers/instance/_postgresql.tpl): literal names, the password from the env
    # DAGSTER_PG_PASSWORD, which the chart and the run launcher set from global.postgresqlSecretName
    pg = values["postgresql"]
    assert instance["storage"]["postgres"]["postgres_db"] == {
        "hostname": pg["postgresqlHost"],
        "port": pg["service"]["port"],
        "username": pg["postgresqlUsername"],
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "db_name": pg["postgresqlDatabase"],
        "scheme": pg["postgresqlScheme"],
    }
    assert launcher["postgres_password_secret"] == values["global"]["postgresqlSecretName"]
    # and dagster-k8s takes the launcher's config as written (its own config schema)
    from dagster._config import Shape, process_config
    from dagster_k8s import K8sRunLauncher

    checked = process_config(Shape(K8sRunLauncher.config_type()), launcher)
    assert checked.success, checked.errors


def test_every_dagster_pod_runs_on_the_cpu_pool() -> None:
    """docs/kubernetes.md: the CPU pool is for Dagster and the run pods; no Dagster pod lands on a GPU node."""
    values = yaml.safe_load((DEPLOY / "helm/dagster-values.yaml").read_text())
    (location,) = values["dagster-user-deployments"]["deployments"]
    run = values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]["podSpecConfig"]
    for name, selector in {
        "dagsterWebserver": values.get("dagsterWebserver", {}).get("nodeSelector"),
        "dagsterDaemon": values["dagsterDaemon"].get("nodeSelector"),
        "the code location": location["nodeSelector"],
        "the run pods": run["nodeSelector"],
    }.items():
        assert selector == {"ai-platform/pool": "cpu"}, name
