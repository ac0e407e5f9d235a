"""The prompt bundle: every compiled prompt of a model as one small OCI artifact.

An OCI image-spec v1.1 artifact manifest: `artifactType` names the bundle, the
config is the empty descriptor, and each layer is one compiled prompt (its
canonical JSON, so a layer digest is `sha256:<prompt version>`). Nothing that
varies between builds (time, commit) is in the manifest, so the same prompts
always give the same digest: the bundle's data version. The gateway loads a
bundle by digest, which is what lets a prompt change go live without a new
model image or a vLLM restart.
"""

from __future__ import annotations

import json
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.errors import ArtifactTypeError, DuplicatePromptNameError
from ai_platform.oci.layout import EMPTY, Descriptor, OciLayout
from ai_platform.prompts.compiler import CompiledPrompt

ARTIFACT_TYPE = "application/vnd.ai-platform.prompt-bundle.v1"
PROMPT_MEDIA_TYPE = "application/vnd.ai-platform.prompt.v1+json"
TITLE = "org.opencontainers.image.title"
VERSION = "ai-platform.prompt.version"


def build(layout: OciLayout, model: str, prompts: list[CompiledPrompt]) -> Descriptor:
    names = [p.name for p in prompts]
    if len(set(names)) != len(names):
        raise DuplicatePromptNameError(f"{model}: two prompt files compile to the same name ({sorted(names)})")
    layers = [
        layout.put_blob(p.canonical(), PROMPT_MEDIA_TYPE, {TITLE: f"{p.name}.json", VERSION: p.version}).to_json()
        for p in sorted(prompts, key=lambda p: p.name)
    ]
    config = layout.put_blob(b"{}", EMPTY).to_json()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": ARTIFACT_TYPE,
        "config": config,
        "layers": layers,
        "annotations": {"ai-platform.model": model},
    }
    short = sha256_hex(canonical_json(manifest))[:16]
    return layout.put_manifest(manifest, tags=[f"sha-{short}", "latest"])


def load(layout: OciLayout, ref: str) -> dict[str, dict[str, Any]]:
    """Compiled documents by prompt name, each checked against its layer digest."""
    manifest = layout.manifest(ref)
    if manifest.get("artifactType") != ARTIFACT_TYPE:
        raise ArtifactTypeError(f"{ref}: not a prompt bundle (artifactType {manifest.get('artifactType')!r})")
    documents = {}
    for layer in manifest["layers"]:
        document = json.loads(layout.read_blob(layer["digest"]))
        documents[document["name"]] = document
    return documents
