"""`ai-platform weights`: safetensors validation, hashes, manifests and signatures."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.cli.common import Areas, command, emit
from ai_platform.errors import UsageError


def weights_verify(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ai_platform.config import Verification, WeightsSignature
    from ai_platform.weights import manifest as wm
    from ai_platform.weights import signing

    folder = Path(args.dir)
    started = time.monotonic()
    actual = wm.build_manifest(folder, allow_pickle=args.allow_pickle)
    seconds = time.monotonic() - started
    problems = wm.compare(actual, wm.load(Path(args.manifest))) if args.manifest else []
    # model_signing names the subject after the folder; so do we, for the same statement
    statement = signing.statement(actual, folder.resolve().name, allow_symlinks=signing.has_symlinks(folder, actual))
    result: dict[str, Any] = {
        "ok": True,
        "digest": wm.digest(actual),
        "files": len(actual["files"]),
        "tensors": sum(len(f.get("tensors", [])) for f in actual["files"]),
        "bytes": sum(f["size"] for f in actual["files"]),
        "seconds": round(seconds, 3),
        "signing_subject": statement["subject"][0]["digest"]["sha256"],
        "problems": problems,
    }
    if args.reference:
        fraction = wm.identical_fraction(actual, wm.load(Path(args.reference)))
        result["identical_to_reference"] = fraction
        limit = Verification().identical_fraction_limit if args.identical_limit is None else args.identical_limit
        problems += wm.not_a_fine_tune(fraction, limit)
    if args.signature:
        try:
            signature = WeightsSignature(
                path=args.signature, public_key=args.public_key, identity=args.identity, oidc_issuer=args.oidc_issuer
            )
        except ValidationError as exc:
            raise UsageError(f"--signature: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        problems += signing.verify_signature(folder, statement, signature, Path())
        result["signature"] = args.signature
    if args.write_manifest:
        Path(args.write_manifest).write_bytes(canonical_json(actual) + b"\n")
    if args.write_signing_manifest:
        Path(args.write_signing_manifest).write_bytes(canonical_json(statement) + b"\n")
        result["signing_manifest"] = sha256_hex(canonical_json(statement))
    result["ok"] = not problems
    lines = [
        f"{folder}: {result['files']} files, {result['tensors']} tensors, {result['bytes']:,} bytes "
        f"in {seconds:.2f}s; digest sha256:{result['digest']}"
    ]
    if "identical_to_reference" in result:
        lines.append(f"identical to reference: {result['identical_to_reference']:.1%} of tensors")
    if "signing_manifest" in result:
        lines.append(f"model-signing manifest sha256:{result['signing_manifest']} in {args.write_signing_manifest}")
    lines += [f"FAIL {p}" for p in problems] or (["ok: matches the manifest"] if args.manifest else [])
    if args.signature and not problems:
        lines.append(f"ok: signature {args.signature} verifies and covers every file")
    emit(args, result, "\n".join(lines))
    return 0 if result["ok"] else 1


def share(text: str) -> float:
    """A share in (0, 1], as verification.identical_fraction_limit takes."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share in (0, 1], e.g. 0.99 (got {text!r})")
    return value


def add(areas: Areas) -> None:
    weights = areas.add_parser("weights", help="weights verification").add_subparsers(dest="command", required=True)
    p = command(
        weights,
        "verify",
        weights_verify,
        "validate safetensors headers and hash every file and tensor",
        (
            "ai-platform weights verify demo/platform/hub/contract-qwen2"
            " --manifest demo/platform/manifests/contract-qwen2.json",
            "ai-platform weights verify ./my-model --write-manifest my-model.json --json",
        ),
    )
    p.add_argument("dir", metavar="DIR", help="the model folder (safetensors, config and tokenizer files)")
    p.add_argument("--manifest", help="a trusted manifest to hold the weights to")
    p.add_argument("--reference", help="a base model's manifest: report the share of identical tensors")
    p.add_argument(
        "--identical-limit",
        type=share,
        metavar="SHARE",
        help="with --reference: fail when at least this share of tensors is identical (default 0.99, as in a spec)",
    )
    p.add_argument("--write-manifest", help="write the computed manifest here")
    p.add_argument(
        "--allow-pickle", action="store_true", help="accept pickle weights (.bin .pt ...) that picklescan reports clean"
    )
    p.add_argument(
        "--write-signing-manifest",
        metavar="FILE",
        help="write the OpenSSF model-signing v1.0 statement of the folder here, ready to sign",
    )
    p.add_argument("--signature", help="a model-signing signature (Sigstore bundle) to verify the folder against")
    p.add_argument("--public-key", help="the PEM public key the signature must verify with")
    p.add_argument("--identity", help="Sigstore keyless: the signer identity (with --oidc-issuer)")
    p.add_argument("--oidc-issuer", help="Sigstore keyless: the identity's OIDC issuer")
