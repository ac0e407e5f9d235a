"""The compiled_prompts and prompt_bundle stages.

compiled_prompts compiles every prompt a model spec uses, at the pinned commit,
into the artifact store (a compiled document's blob digest is its version) and
records each version in the warehouse. prompt_bundle packs them into one OCI
artifact in the embedded registry; its manifest digest is its data version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ai_platform.artifacts import ArtifactStore, canonical_json, sha256_hex
from ai_platform.errors import PromptError
from ai_platform.image.layout import Descriptor
from ai_platform.image.stage import local_registry, publish
from ai_platform.prompts import bundle, engine
from ai_platform.prompts.compiler import CompiledPrompt, compile_file
from ai_platform.prompts.render import render_messages
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse


@dataclass(frozen=True)
class PromptSet:
    prompts: list[CompiledPrompt]
    digest: str  # over (name, version) pairs: unchanged prompts, unchanged data version

    def versions(self) -> dict[str, str]:
        return {p.name: p.version for p in self.prompts}


def compile_model_prompts(snap: SpecSnapshot) -> PromptSet:
    store = ArtifactStore(snap.platform.artifacts_path)
    compiled = [
        compile_file(snap.platform.file(f"prompts/{name}.prompt"), display_path=f"prompts/{name}.prompt")
        for name in snap.spec.prompts
    ]
    for prompt in compiled:
        store.put_bytes(prompt.canonical())
    pairs = sorted((p.name, p.version) for p in compiled)
    result = PromptSet(compiled, sha256_hex(canonical_json(pairs)))
    listing = [{"name": n, "version": v} for n, v in pairs]
    store.set_ref(
        "compiled_prompts", snap.spec.name, {"digest": result.digest, "commit": snap.commit.sha, "prompts": listing}
    )
    return result


def record_versions(warehouse: Warehouse, snap: SpecSnapshot, prompts: PromptSet) -> None:
    rows = [[p.version, p.name, p.document["source"]["path"], p.document["source"]["sha256"], snap.commit.sha,
             canonical_json(p.document).decode("utf-8")] for p in prompts.prompts]  # fmt: skip
    with warehouse.write() as con:
        con.executemany(
            "INSERT INTO prompt_versions (version, name, source_path, source_sha256, repo_commit, compiled)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (version) DO NOTHING",
            rows,
        )


def stored_prompts(snap: SpecSnapshot) -> list[dict[str, Any]]:
    """The compiled documents compiled_prompts recorded, each re-read and checked by its digest."""
    store = ArtifactStore(snap.platform.artifacts_path)
    documents = []
    for entry in store.ref("compiled_prompts", snap.spec.name)["prompts"]:
        data = store.blob_path(entry["version"]).read_bytes()
        if sha256_hex(data) != entry["version"]:
            raise PromptError(f"compiled prompt {entry['name']}: stored bytes do not match version {entry['version']}")
        documents.append(json.loads(data))
    return documents


def example_values(snap: SpecSnapshot, document: dict[str, Any]) -> dict[str, Any]:
    """The first eval case whose variables fit the prompt, else a `<name>` per string variable."""
    names = {v["name"] for v in document["variables"]}
    for eval_path in snap.spec.canary.evals:
        for line in snap.platform.file(eval_path).read_text(encoding="utf-8").splitlines():
            case = json.loads(line) if line.strip() else {}
            if isinstance(case.get("vars"), dict) and case["vars"].keys() == names:
                return case["vars"]
    return {v["name"]: f"<{v['name']}>" for v in document["variables"] if v["schema"].get("type") == "string"}


def serveability(snap: SpecSnapshot, document: dict[str, Any]) -> list[str]:
    """Why the engine would not serve this compiled prompt, re-checked from the stored artifact."""
    found = engine.problems(document["output_schema"]) if document["output_schema"] is not None else []
    try:
        render_messages(document, example_values(snap, document))
    except PromptError as exc:
        found.append(f"the example does not render: {exc}")
    return [f"{document['name']}: {problem}" for problem in found]


def bundle_repository(model: str) -> str:
    return f"{model}-prompts"


def build_bundle(snap: SpecSnapshot) -> Descriptor:
    store = ArtifactStore(snap.platform.artifacts_path)
    prompts = [CompiledPrompt(d, sha256_hex(canonical_json(d)), ()) for d in stored_prompts(snap)]
    repository = bundle_repository(snap.spec.name)
    layout = local_registry(snap.platform, repository)
    descriptor = bundle.build(layout, snap.spec.name, prompts)
    publish(snap.platform, layout, repository, descriptor)
    store.set_ref("prompt_bundle", snap.spec.name, {"digest": descriptor.digest, "commit": snap.commit.sha,
                                                    "layout": str(layout.root)})  # fmt: skip
    return descriptor
