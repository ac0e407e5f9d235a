"""Strict validation of a rendered object, what `kubectl apply --validate=strict` (server-side field validation
`Strict`) would accept on a cluster with the CRDs the kit needs installed.

- Built-in kinds: `kubernetes_validate` at Kubernetes 1.35, strict (an unknown field is an error).
- Custom resources (KEDA `ScaledObject`; the Prometheus operator's `PodMonitor`, `ServiceMonitor`,
  `PrometheusRule`): the `openAPIV3Schema` of the served version in the project's own CRD, pinned in
  tests/crds/ (SOURCES.md names the repository, tag and path of each). The API server prunes or, under strict
  field validation, rejects a field the structural schema does not name, so every object schema here that lists
  `properties` and neither sets `additionalProperties` nor `x-kubernetes-preserve-unknown-fields` is closed.
  `metadata` is checked as ObjectMeta (the CRD schema says only `type: object`).
- Any other kind is an error: nothing is rendered that no schema checks.

Not checked: the CRDs' CEL rules (`x-kubernetes-validations`), which need a CEL engine; a test that cares about one
(e.g. KEDA's minReplicaCount <= maxReplicaCount) asserts it itself.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES = "1.35.0"
CRDS = Path(__file__).parent / "crds"
CRD_FILES = {
    ("keda.sh/v1alpha1", "ScaledObject"): "keda.sh_scaledobjects.yaml",
    ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com_podmonitors.yaml",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_servicemonitors.yaml",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_prometheusrules.yaml",
}


class SchemaError(ValueError):
    """A rendered object its kind's schema rejects, or a kind no schema here covers."""


def validate_strictly(manifest: dict[str, Any]) -> None:
    """Raise if the cluster would reject `manifest` under strict field validation (see the module's docstring)."""
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise SchemaError(f"no apiVersion and kind: {manifest!r:.200}")
    if (api_version, kind) in CRD_FILES:
        _validate_custom(manifest, api_version, kind)
        return
    try:
        kubernetes_validate.validate(manifest, KUBERNETES, strict=True)
    except kubernetes_validate.SchemaNotFoundError as exc:
        raise SchemaError(f"{kind} ({api_version}): no schema for this kind at Kubernetes {KUBERNETES}") from exc
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise SchemaError(f"{kind} {manifest.get('metadata', {}).get('name', '?')}: {where}: {exc.message}") from exc


def _validate_custom(manifest: dict[str, Any], api_version: str, kind: str) -> None:
    name = f"{kind} {manifest.get('metadata', {}).get('name', '?')}"
    metadata = manifest.get("metadata")
    if not isinstance(metadata, dict):
        raise SchemaError(f"{name}: no metadata")
    # ObjectMeta, checked as any built-in kind's (a ConfigMap carries nothing else that is required)
    try:
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}, KUBERNETES, True)
    except kubernetes_validate.ValidationError as exc:
        raise SchemaError(f"{name}: metadata: {exc.message}") from exc
    validator = _crd_validator(api_version, kind)
    errors = sorted(validator.iter_errors({**manifest, "metadata": {}}), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
        raise SchemaError(f"{name}: {where}: {errors[0].message} ({len(errors)} error(s))")


@cache
def _crd_validator(api_version: str, kind: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load((CRDS / CRD_FILES[(api_version, kind)]).read_text())
    group, version = api_version.split("/")
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind, crd["metadata"]["name"]
    served = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}
    if version not in served:
        raise SchemaError(f"{kind}: the CRD serves {sorted(served)}, not {version}")
    schema = _closed(copy.deepcopy(served[version]["schema"]["openAPIV3Schema"]))
    schema["properties"]["apiVersion"] = {"const": api_version}
    schema["properties"]["kind"] = {"const": kind}
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The structural schema as the API server applies it: an object schema with `properties` takes no others."""
    closed = dict(schema)
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern.startswith("^(?i)"):  # Go's regexp takes a flag anywhere, Python's first
        closed["pattern"] = "(?i)^" + pattern.removeprefix("^(?i)")
    if "properties" in schema:
        closed["properties"] = {name: _closed(sub) for name, sub in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            closed["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), dict):
        closed["additionalProperties"] = _closed(schema["additionalProperties"])
    if isinstance(schema.get("items"), dict):
        closed["items"] = _closed(schema["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            closed[key] = [_closed(sub) for sub in schema[key]]
    if "not" in schema:
        closed["not"] = _closed(schema["not"])
    return closed
