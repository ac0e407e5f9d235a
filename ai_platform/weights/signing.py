"""The OpenSSF model-signing manifest of a model folder, and checking a signature over it.

`statement` writes what `model_signing` (sigstore/model-transparency, pinned at
1.1.1) signs, from hashes our manifest already holds, so that standard tooling
can sign it and `model_signing` can verify the folder against it. Followed:

- `model_signing/_signing/signing.py`, class `Payload`: an in-toto Statement v1
  (`_type` "https://in-toto.io/Statement/v1"), `predicateType`
  "https://model_signing/signature/v1.0", `predicate` = {"serialization": ...,
  "resources": [{"name", "algorithm", "digest"}, ...]}; exactly one subject,
  {"name": the model's name, "digest": {"sha256": ...}}, where the digest is
  sha256 over the resources' raw digest bytes, concatenated in resource order.
  `dsse_payload_to_manifest` recomputes it on verification and rejects a mismatch.
- `model_signing/manifest.py`: resources are sorted by their key, a
  `PurePosixPath` relative to the model root, which orders part by part
  (so "a/b" sorts before "a.txt"); `_FileSerialization.serialization_parameters`
  = {"method": "files", "hash_type": "sha256", "allow_symlinks": bool} plus
  "ignore_paths" (relative, only when there are any).
- `model_signing/hashing.py`, `Config.hash`: ".git", ".gitattributes",
  ".github" and ".gitignore" at the model root are always ignored and listed
  in "ignore_paths". We add ".cache" (huggingface_hub's download bookkeeping,
  which our own manifest leaves out too). `model_signing` writes ignore_paths
  in set order; we sort them (verifiers read them as a set).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from ai_platform.config import WeightsSignature
from ai_platform.errors import SigningToolMissingError

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
IGNORED = (".cache", ".git", ".gitattributes", ".github", ".gitignore")
# model-signing 1.1.1 imports OpenSSL without declaring pyOpenSSL: name both.
INSTALL = (
    "pip install model-signing==1.1.1 pyOpenSSL==26.4.0 (both pinned, with their deps, in requirements/platform.lock)"
)


def _ignored(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in IGNORED)


def statement(manifest: dict[str, Any], name: str, *, allow_symlinks: bool = False) -> dict[str, Any]:
    """The model-signing v1.0 in-toto statement for the files of one of our manifests."""
    files = sorted((f for f in manifest["files"] if not _ignored(f["path"])), key=lambda f: f["path"].split("/"))
    resources = [{"name": f["path"], "algorithm": "sha256", "digest": f["sha256"]} for f in files]
    root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in resources)).hexdigest()
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": root}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "serialization": {
                "method": "files",
                "hash_type": "sha256",
                "allow_symlinks": allow_symlinks,
                "ignore_paths": sorted(IGNORED),
            },
            "resources": resources,
        },
    }


def has_symlinks(folder: Path, manifest: dict[str, Any]) -> bool:
    """model_signing refuses symlinks unless told; our scan already refused any that leave the folder."""
    return any((Path(folder) / f["path"]).is_symlink() for f in manifest["files"])


def _signed_statement(bundle: Path) -> dict[str, Any]:
    """The statement inside a Sigstore bundle's DSSE envelope (read after the signature checked out)."""
    envelope = json.loads(bundle.read_text(encoding="utf-8"))["dsseEnvelope"]
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


def verify_signature(folder: Path, ours: dict[str, Any], signature: WeightsSignature, root: Path) -> list[str]:
    """Problems with the signature over `folder` (none when it verifies and covers every file).

    `root` is where the signature's paths are relative to (the platform repo).
    """
    try:
        from model_signing import verifying
    except ImportError as exc:  # a named signature that cannot be checked must not pass quietly
        raise SigningToolMissingError(
            f"verification.signature names {signature.path} but model-signing cannot be imported ({exc}); "
            f"install it: {INSTALL}"
        ) from None
    bundle = root / signature.path
    try:
        config = verifying.Config()  # type: ignore[no-untyped-call]
        if signature.public_key:
            config.use_elliptic_key_verifier(public_key=root / signature.public_key)
        else:
            assert signature.identity and signature.oidc_issuer, "WeightsSignature requires both for keyless"
            config.use_sigstore_verifier(identity=signature.identity, oidc_issuer=signature.oidc_issuer)
        # Hash only the signed files: the folder may hold huggingface_hub's .cache bookkeeping.
        # Unsigned files are found below, by name, instead.
        config.set_ignore_unsigned_files(True)
        config.verify(Path(folder), bundle)
        signed = {r["name"]: r["digest"] for r in _signed_statement(bundle)["predicate"]["resources"]}
    except Exception as exc:  # model_signing, sigstore and cryptography each raise their own types
        return [f"signature {signature.path}: {type(exc).__name__}: {exc}"]
    mine = {r["name"]: r["digest"] for r in ours["predicate"]["resources"]}
    problems = [f"{name}: not covered by the signature" for name in sorted(mine.keys() - signed.keys())]
    problems += [f"{name}: signed but not in the model" for name in sorted(signed.keys() - mine.keys())]
    problems += [
        f"{name}: sha256 differs from the signed one"
        for name in sorted(mine.keys() & signed.keys())
        if mine[name] != signed[name]
    ]
    return problems
