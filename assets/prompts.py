"""compiled_prompts and prompt_bundle: .prompt files into schema-enforced requests."""

import json

import dagster as dg

from ai_platform.image.locations import bundle_repository
from ai_platform.prompts.render import request_body
from ai_platform.prompts.stage import build_bundle, compile_model_prompts, example_values, record_versions
from ai_platform.records import CompiledPrompts
from assets import versions
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

SERVEABLE = dg.AssetCheckSpec(
    "prompts_serveable",
    asset="compiled_prompts",
    blocking=True,
    description="Each stored schema is valid 2020-12, passes vLLM's xgrammar rules, compiles, and an example renders.",
)


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.PROMPTS,
    deps=["model_spec"],
    group_name="prompts",
    kinds={"json"},
    owners=["team:prompt-owners"],
    check_specs=[SERVEABLE],
    description="Every prompt the spec uses, compiled to canonical JSON with a JSON Schema 2020-12 output.",
)
def compiled_prompts(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    prompts = compile_model_prompts(snap)
    platform_repo.records(snap).publish(prompts.record, snap.spec.name, passed=prompts.passed)
    record_versions(platform_repo.warehouse(snap), snap, prompts)
    for warning in (w for p in prompts.prompts for w in p.warnings):
        context.log.warning(str(warning))
    metadata: dict[str, dg.RawMetadataValue] = {"commit": snap.commit.sha, "versions": prompts.versions()}
    for document in prompts.documents:
        body = request_body(document, example_values(snap, document), model=snap.spec.name)
        metadata[f"{document['name']}/output_schema"] = dg.MetadataValue.json(document["output_schema"] or {})
        metadata[f"{document['name']}/example_request"] = dg.MetadataValue.md(
            f"```json\n{json.dumps(body, ensure_ascii=False, indent=2)}\n```"
        )
    problems = "\n".join(prompts.problems) or "none"
    check = dg.AssetCheckResult(check_name=SERVEABLE.name, passed=prompts.passed, metadata={"problems": problems})
    return dg.MaterializeResult(metadata=metadata, check_results=[check], data_version=dg.DataVersion(prompts.digest))


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.PROMPTS,
    deps=["compiled_prompts"],
    group_name="prompts",
    kinds={"oci"},
    owners=["team:prompt-owners"],
    description="All compiled prompts of a model as one small OCI artifact; hot-reloaded by the gateway.",
)
def prompt_bundle(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    records = platform_repo.records(snap)
    descriptor, bundle = build_bundle(snap, records.read(CompiledPrompts, snap.spec.name))
    records.publish(bundle, snap.spec.name)
    return dg.MaterializeResult(
        metadata={
            "digest": descriptor.digest,
            "size": descriptor.size,
            "commit": snap.commit.sha,
            "repository": bundle_repository(snap.spec.name),
        },
        data_version=dg.DataVersion(descriptor.digest.removeprefix("sha256:")),
    )
