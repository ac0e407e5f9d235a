"""compiled_prompts and prompt_bundle in Dagster on the demo repo: versions in the warehouse,
a reproducible OCI bundle, and a broken prompt stopping the chain at compile time."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import jsonschema
from conftest import MODEL, materialize

from ai_platform.oci.layout import OciLayout
from ai_platform.platform_repo import git
from ai_platform.prompts import bundle
from ai_platform.warehouse import Warehouse

PROMPTS = ("model_spec", "compiled_prompts", "prompt_bundle")


def data_version(result: dg.ExecuteInProcessResult, asset: str) -> str:
    (mat,) = result.asset_materializations_for_node(asset)
    return mat.tags["dagster/data_version"]


def test_prompts_compile_record_and_bundle(instance, tmp_path: Path) -> None:
    result = materialize(instance, *PROMPTS)
    assert result.success
    checks = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert [c.check_name for c in checks] == ["spec_valid", "prompts_serveable"] and all(c.passed for c in checks)
    (mat,) = result.asset_materializations_for_node("compiled_prompts")
    version = mat.metadata["versions"].value["contract_review"]
    assert "input_pdf_text" not in mat.metadata["contract_review/example_request"].value  # an eval case filled it

    _, rows = Warehouse(tmp_path / "home/warehouse.duckdb").query(
        "SELECT name, source_path, compiled FROM prompt_versions WHERE version = ?", [version]
    )
    ((name, source_path, compiled),) = rows
    assert (name, source_path) == ("contract_review", "prompts/contract_review.prompt")
    schema = json.loads(compiled)["output_schema"]
    jsonschema.Draft202012Validator.check_schema(schema)

    layout = OciLayout(tmp_path / f"home/registry/{MODEL}-prompts")
    digest = "sha256:" + data_version(result, "prompt_bundle")
    assert layout.resolve("latest").digest == digest
    assert bundle.load(layout, digest)["contract_review"]["output_schema"] == schema

    again = materialize(instance, *PROMPTS)
    assert data_version(again, "prompt_bundle") == data_version(result, "prompt_bundle")
    assert data_version(again, "compiled_prompts") == data_version(result, "compiled_prompts")


def test_a_prompt_edit_changes_only_the_prompt_versions(instance, own_demo_repo: Path) -> None:
    first = materialize(instance, *PROMPTS)
    path = own_demo_repo / "prompts/contract_review.prompt"
    path.write_text(path.read_text(encoding="utf-8") + 'params: {"temperature": 0, "max_tokens": 400}\n', "utf-8")
    git(own_demo_repo, "commit", "--quiet", "-am", "cap the reply length")
    second = materialize(instance, *PROMPTS)
    assert second.success
    assert data_version(second, "model_spec") == data_version(first, "model_spec")
    for asset in ("compiled_prompts", "prompt_bundle"):
        assert data_version(second, asset) != data_version(first, asset)


def test_a_broken_prompt_fails_with_its_position_and_stops_the_chain(instance, own_demo_repo: Path) -> None:
    path = own_demo_repo / "prompts/contract_review.prompt"
    path.write_text(path.read_text(encoding="utf-8").replace('"level": "enum', '"level": "enmu'), "utf-8")
    git(own_demo_repo, "commit", "--quiet", "-am", "a typo in the schema")
    result = materialize(instance, *PROMPTS)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "model_spec"  # its blocking spec_valid check compiles every prompt the spec uses
    (check,) = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    message = check.metadata["problems"].value
    line = 1 + path.read_text(encoding="utf-8").split('"enmu')[0].count("\n")
    assert f"prompts/contract_review.prompt:{line}:" in message and 'unknown type "enmu' in message
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "compiled_prompts" not in ran and "prompt_bundle" not in ran
