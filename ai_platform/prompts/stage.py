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
from ai_platform.image.locations import bundle_repository, image_location, local_registry, publish
from ai_platform.oci.layout import Descriptor
from ai_platform.prompts import bundle, engine
from ai_platform.prompts.compiler import CompiledPrompt, compile_file, version_of
from ai_platform.prompts.render import render_messages
from ai_platform.records import CompiledPrompts, PromptBundle, PromptVersion
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse, insert_new


@dataclass(frozen=True)
class PromptSet:
    """Every prompt a model uses, compiled; serveable only when `problems` is empty."""

    prompts: list[CompiledPrompt]
    digest: str  # over (name, version) pairs: unchanged prompts, unchanged data version
    commit: str
    problems: list[str]  # why the engine would not serve a prompt (the prompts_serveable check)

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def documents(self) -> list[dict[str, Any]]:
        return [p.document for p in self.prompts]

    def versions(self) -> dict[str, str]:
        return {p.name: p.version for p in self.prompts}

    @property
    def record(self) -> CompiledPrompts:
        pairs = tuple(PromptVersion(p.name, p.version) for p in sorted(self.prompts, key=lambda p: p.name))
        return CompiledPrompts(self.digest, self.commit, pairs)


def compile_model_prompts(snap: SpecSnapshot) -> PromptSet:
    """Compile every prompt the spec uses into the artifact store, and check each stored one is serveable."""
    store = snap.platform.artifacts()
    compiled = [
        compile_file(snap.platform.file(f"prompts/{name}.prompt"), display_path=f"prompts/{name}.prompt")
        for name in snap.spec.prompts
    ]
    for prompt in compiled:
        store.put_bytes(prompt.canonical())
    pairs = sorted((p.name, p.version) for p in compiled)
    stored = stored_prompts(store, [p.version for p in compiled])
    problems = [problem for document in stored for problem in serveability(snap, document)]
    return PromptSet(compiled, sha256_hex(canonical_json(pairs)), snap.commit.sha, problems)


def record_versions(warehouse: Warehouse, snap: SpecSnapshot, prompts: PromptSet) -> None:
    rows = [
        [
            p.version,
            p.name,
            p.document["source"]["path"],
            p.document["source"]["sha256"],
            snap.commit.sha,
            canonical_json(p.document).decode("utf-8"),
        ]
        for p in prompts.prompts
    ]
    with warehouse.write() as con:
        columns = ("version", "name", "source_path", "source_sha256", "repo_commit", "compiled")
        insert_new(con, "prompt_versions", columns, "version", rows)


def stored_prompts(store: ArtifactStore, versions: list[str]) -> list[dict[str, Any]]:
    """Compiled documents as the artifact store holds them, each re-read and held to its version."""
    documents = []
    for version in versions:
        data = store.blob_path(version).read_bytes()
        if sha256_hex(data) != version:
            raise PromptError(f"compiled prompt: stored bytes do not match version {version}")
        documents.append(json.loads(data))
    return documents


def example_values(snap: SpecSnapshot, document: dict[str, Any]) -> dict[str, Any]:
    """The first eval case whose variables fit the prompt, else a `<name>` per string variable."""
    names = {v["name"] for v in document["variables"]}
    for eval_path in snap.spec.canary.evals:
        for line in snap.platform.file(eval_path).read_text(encoding="utf-8").splitlines():
            case = json.loads(line) if line.strip() else {}
            values = case.get("vars")
            if isinstance(values, dict) and values.keys() == names:
                return values
    return {v["name"]: f"<{v['name']}>" for v in document["variables"] if v["schema"].get("type") == "string"}


def serveability(snap: SpecSnapshot, document: dict[str, Any]) -> list[str]:
    """Why the engine would not serve this compiled prompt, re-checked from the stored artifact."""
    found = engine.problems(document["output_schema"]) if document["output_schema"] is not None else []
    try:
        render_messages(document, example_values(snap, document))
    except PromptError as exc:
        found.append(f"the example does not render: {exc}")
    return [f"{document['name']}: {problem}" for problem in found]


def build_bundle(snap: SpecSnapshot, compiled: CompiledPrompts) -> tuple[Descriptor, PromptBundle]:
    """The serveable prompts as one OCI artifact, pushed where platform.yaml says."""
    store = snap.platform.artifacts()
    documents = stored_prompts(store, [p.version for p in compiled.prompts])
    prompts = [CompiledPrompt(d, version_of(d), ()) for d in documents]
    repository = bundle_repository(snap.spec.name)
    layout = local_registry(snap.platform, repository)
    descriptor = bundle.build(layout, snap.spec.name, prompts)
    publish(snap.platform, layout, repository, descriptor)
    pullable = image_location(snap.platform, repository, layout, descriptor.digest).pullable
    return descriptor, PromptBundle(descriptor.digest, compiled.commit, str(layout.root), pullable)
