"""The OpenSSF model-signing manifest: our statement against the layout and against model_signing itself.

Signatures are made with model_signing's own signer and an EC key generated here,
so everything runs offline (Sigstore keyless signing needs an OIDC identity and
the public-good instances).
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import MODEL, materialize
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from safetensors.numpy import save_file

from ai_platform.artifacts import FolderStore, canonical_json, sha256_hex
from ai_platform.config import WeightsSignature
from ai_platform.errors import SigningToolMissingError
from ai_platform.platform_repo import git
from ai_platform.weights.manifest import build_manifest
from ai_platform.weights.signing import statement, verify_signature

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-model"
    (folder / "shards").mkdir(parents=True)
    rng = np.random.default_rng(7)
    save_file({"a": rng.standard_normal((8, 4), dtype=np.float32)}, str(folder / "shards/model-00001.safetensors"))
    save_file({"b": np.arange(6, dtype=np.int32)}, str(folder / "model.safetensors"))
    (folder / "shards.json").write_text('{"n": 1}')  # "shards/…" sorts before "shards.json" part by part
    (folder / "config.json").write_text('{"model_type": "qwen2"}')
    (folder / ".gitattributes").write_text("*.safetensors filter=lfs\n")  # model_signing always ignores it
    (folder / ".cache/huggingface/download").mkdir(parents=True)  # huggingface_hub's bookkeeping
    (folder / ".cache/huggingface/download/model.safetensors.metadata").write_text("x\n")
    return folder


def keypair(where: Path, name: str = "signer") -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = where / f"{name}.key", where / f"{name}.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


def sign(folder: Path, private_key: Path, out: Path) -> dict:
    """Sign with model_signing's public API; return the statement it signed (the DSSE payload)."""
    from model_signing import hashing, signing

    config = hashing.Config().set_ignored_paths(paths=[".cache"])  # as our statement declares
    signing.Config().use_elliptic_key_signer(private_key=private_key).set_hashing_config(config).sign(folder, out)
    return json.loads(base64.b64decode(json.loads(out.read_text())["dsseEnvelope"]["payload"]))


def test_statement_follows_the_v1_layout_field_by_field(model: Path) -> None:
    manifest = build_manifest(model)
    ours = statement(manifest, "tiny-model")
    assert set(ours) == {"_type", "subject", "predicateType", "predicate"}
    assert ours["_type"] == "https://in-toto.io/Statement/v1"
    assert ours["predicateType"] == "https://model_signing/signature/v1.0"
    assert ours["predicate"]["serialization"] == {
        "method": "files",
        "hash_type": "sha256",
        "allow_symlinks": False,
        "ignore_paths": [".cache", ".git", ".gitattributes", ".github", ".gitignore"],
    }
    resources = ours["predicate"]["resources"]
    assert [r["name"] for r in resources] == [
        "config.json",
        "model.safetensors",
        "shards/model-00001.safetensors",
        "shards.json",
    ]
    for r in resources:
        assert set(r) == {"name", "algorithm", "digest"} and r["algorithm"] == "sha256"
        assert r["digest"] == hashlib.sha256((model / r["name"]).read_bytes()).hexdigest()
    (subject,) = ours["subject"]
    root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in resources)).hexdigest()
    assert subject == {"name": "tiny-model", "digest": {"sha256": root}}


def test_statement_is_what_model_signing_signs(model: Path, tmp_path: Path) -> None:
    private, _ = keypair(tmp_path)
    theirs = sign(model, private, tmp_path / "model.sig")
    theirs["predicate"]["serialization"]["ignore_paths"].sort()  # model_signing writes them in set order
    assert statement(build_manifest(model), model.name) == theirs


def test_a_signature_verifies_and_must_cover_every_file(model: Path, tmp_path: Path) -> None:
    private, public = keypair(tmp_path)
    sign(model, private, tmp_path / "model.sig")
    spec = WeightsSignature(path="model.sig", public_key=public.name)  # both relative to tmp_path, like a repo
    assert verify_signature(model, statement(build_manifest(model), "m"), spec, tmp_path) == []

    (model / "notes.txt").write_text("added after signing")
    assert verify_signature(model, statement(build_manifest(model), "m"), spec, tmp_path) == [
        "notes.txt: not covered by the signature"
    ]
    (model / "notes.txt").unlink()

    data = bytearray((model / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (model / "model.safetensors").write_bytes(bytes(data))
    (problem,) = verify_signature(model, statement(build_manifest(model), "m"), spec, tmp_path)
    assert problem.startswith("signature model.sig: ValueError: Signature mismatch") and "model.safetensors" in problem


def test_a_signature_by_another_key_fails(model: Path, tmp_path: Path) -> None:
    private, _ = keypair(tmp_path)
    _, other = keypair(tmp_path, "someone-else")
    sign(model, private, tmp_path / "model.sig")
    spec = WeightsSignature(path="model.sig", public_key=other.name)
    (problem,) = verify_signature(model, statement(build_manifest(model), "m"), spec, tmp_path)
    assert problem.startswith("signature model.sig: ")


def test_a_named_signature_without_model_signing_fails_loudly(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "model_signing", None)  # what an environment without the package sees
    spec = WeightsSignature(path="model.sig", public_key="signer.pub")
    with pytest.raises(SigningToolMissingError, match=r"names model\.sig but model-signing cannot be imported"):
        verify_signature(model, statement(build_manifest(model), "m"), spec, tmp_path)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), "weights", "verify", *args], capture_output=True, text=True, timeout=120)


def test_cli_writes_the_signing_manifest_and_checks_a_signature(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "signing.json"
    done = run(str(model), "--write-signing-manifest", str(out), "--json")
    assert done.returncode == 0, done.stderr
    written = json.loads(out.read_text())
    assert written == statement(build_manifest(model), "tiny-model")
    report = json.loads(done.stdout)
    assert report["signing_manifest"] == sha256_hex(canonical_json(written))
    assert report["signing_subject"] == written["subject"][0]["digest"]["sha256"]

    private, public = keypair(tmp_path)
    sign(model, private, tmp_path / "model.sig")
    ok = run(str(model), "--signature", str(tmp_path / "model.sig"), "--public-key", str(public))
    assert ok.returncode == 0 and "verifies and covers every file" in ok.stdout, ok.stdout + ok.stderr
    (model / "extra.json").write_text("{}")
    bad = run(str(model), "--signature", str(tmp_path / "model.sig"), "--public-key", str(public), "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["problems"] == ["extra.json: not covered by the signature"]
    half = run(str(model), "--signature", str(tmp_path / "model.sig"))
    assert half.returncode == 1 and half.stderr.startswith("error: --signature: give either public_key")


def test_verified_weights_stores_the_signing_manifest_and_checks_the_signature(
    instance, own_demo_repo: Path, tmp_path: Path
) -> None:
    private, public = keypair(tmp_path)
    (own_demo_repo / "signatures").mkdir()
    sign(own_demo_repo / "hub/contract-qwen2", private, own_demo_repo / "signatures/contract-qwen2.sig")
    (own_demo_repo / "signatures/contract-qwen2.pub").write_bytes(public.read_bytes())
    path = own_demo_repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["verification"]["signature"] = {
        "path": "signatures/contract-qwen2.sig",
        "public_key": "signatures/contract-qwen2.pub",
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    git(own_demo_repo, "add", "-A")
    git(own_demo_repo, "commit", "--quiet", "-m", "the weights are signed")

    result = materialize(instance, "model_spec", "raw_weights", "verified_weights")
    assert result.success
    evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    (evaluation,) = [e for e in evaluations if e.asset_key.to_user_string() == "verified_weights"]
    assert evaluation.passed, evaluation.metadata["problems"].value
    (mat,) = result.asset_materializations_for_node("verified_weights")
    assert mat.metadata["signature"].value == "signatures/contract-qwen2.sig"
    digest = mat.metadata["signing_manifest"].value.removeprefix("sha256:")
    stored = FolderStore(tmp_path / "home/artifacts").get_json(digest)
    assert stored["predicateType"] == "https://model_signing/signature/v1.0"
    assert stored["subject"][0]["name"] == MODEL
    assert mat.metadata["signing_subject"].value == f"sha256:{stored['subject'][0]['digest']['sha256']}"
