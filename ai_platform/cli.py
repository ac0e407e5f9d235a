"""`ai-platform`: one entry point, subcommands per area.

Every command exits 0 on success and 1 on an expected failure, printing
`error: <message>` on stderr and no traceback; `--json` prints a
machine-readable result on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json
from ai_platform.errors import PlatformError

Handler = Callable[[argparse.Namespace], Any]


def _emit(args: argparse.Namespace, result: Any, human: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(result, ensure_ascii=False, default=_json_default, indent=2))
    else:
        print(human)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _warehouse_path(args: argparse.Namespace) -> Path:
    """--warehouse, else platform.yaml's storage.warehouse (on $AI_PLATFORM_REPO's branch, if set) under the home."""
    from ai_platform.changes import local_repo
    from ai_platform.config import Storage, under
    from ai_platform.platform_repo import config_at

    if args.warehouse:
        return Path(args.warehouse)
    home = os.environ.get("AI_PLATFORM_HOME")
    if not home:
        raise PlatformError("no warehouse given: pass --warehouse DB or set AI_PLATFORM_HOME")
    repo, branch = os.environ.get("AI_PLATFORM_REPO"), os.environ.get("AI_PLATFORM_BRANCH", "main")
    storage = config_at(local_repo(repo, Path(home)), branch).storage if repo else Storage()
    return under(Path(home), storage.warehouse)


# ---------------------------------------------------------------- handlers


def demo_init(args: argparse.Namespace) -> None:
    from ai_platform.demo.repo import init

    sha = init(Path(args.dir), seed=args.seed)
    _emit(
        args,
        {"dir": str(Path(args.dir).resolve()), "commit": sha, "seed": args.seed},
        f"demo platform repo at {args.dir} (commit {sha[:12]}, seed {args.seed})",
    )


def config_validate(args: argparse.Namespace) -> None:
    from ai_platform.config import load_platform
    from ai_platform.platform_repo import load_at

    repo = Path(args.repo)
    if args.ref:
        home = Path(os.environ.get("AI_PLATFORM_HOME") or repo / ".state")
        commit, platform = load_at(repo, home, args.ref)
        where = f"{repo}@{commit.sha[:12]}"
    else:
        platform, where = load_platform(repo), str(repo)
    models = sorted(platform.models)
    summary = f"{len(models)} model spec{'s' if len(models) != 1 else ''}: {', '.join(models) or 'none'}"
    _emit(args, {"ok": True, "platform": platform.config.name, "models": models}, f"{where}: ok ({summary})")


def warehouse_migrate(args: argparse.Namespace) -> None:
    from ai_platform.warehouse import Warehouse

    applied = Warehouse(_warehouse_path(args)).migrate()
    _emit(args, {"applied": applied}, f"applied migrations: {applied}" if applied else "warehouse is up to date")


def sql(args: argparse.Namespace) -> None:
    from ai_platform.warehouse import Warehouse

    columns, rows = Warehouse(_warehouse_path(args)).query(args.query)
    if args.json:
        _emit(args, [dict(zip(columns, row, strict=True)) for row in rows], "")
        return
    table = [columns, *[["NULL" if v is None else str(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    print("\n".join(lines))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=sys.stderr)


def weights_verify(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ai_platform.artifacts import sha256_hex
    from ai_platform.config import WeightsSignature
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
        problems += wm.not_a_fine_tune(fraction)
    if args.signature:
        try:
            signature = WeightsSignature(
                path=args.signature, public_key=args.public_key, identity=args.identity, oidc_issuer=args.oidc_issuer
            )
        except ValidationError as exc:
            raise PlatformError(f"--signature: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
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
    _emit(args, result, "\n".join(lines))
    return 0 if result["ok"] else 1


def prompts_compile(args: argparse.Namespace) -> int:
    from ai_platform.prompts.compiler import compile_file

    results, failed = [], 0
    for path in args.files:
        try:
            compiled = compile_file(Path(path))
        except PlatformError as exc:  # report every file, not just the first that fails
            failed += 1
            results.append({"path": path, "ok": False, "error": str(exc)})
            print(str(exc), file=sys.stderr)
            continue
        for warning in compiled.warnings:
            print(str(warning), file=sys.stderr)
        entry = {
            "path": path,
            "ok": True,
            "name": compiled.name,
            "version": compiled.version,
            "warnings": [str(w) for w in compiled.warnings],
        }
        if args.out:
            out = Path(args.out) / f"{compiled.name}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(compiled.canonical())  # exactly the bytes whose sha256 is the version
            entry["out"] = str(out)
        results.append(entry)
    lines = [f"{r['path']}: {r['name']} sha256:{r['version']}" for r in results if r["ok"]]
    lines.append(f"{len(results) - failed} compiled, {failed} failed")
    _emit(args, {"ok": not failed, "prompts": results}, "\n".join(lines))
    return 1 if failed else 0


def prompts_render(args: argparse.Namespace) -> None:
    from ai_platform.prompts.compiler import compile_file
    from ai_platform.prompts.render import parse_cli_values, request_body

    compiled = compile_file(Path(args.file))
    values = parse_cli_values(compiled.document, args.var)
    body = request_body(compiled.document, values, model=args.model)
    human = []
    for message in body["messages"]:
        human += [f"--- {message['role']}", message["content"]]
    human += ["--- request body", json.dumps(body, ensure_ascii=False, indent=2)]
    _emit(args, {"version": compiled.version, "body": body}, "\n".join(human))


def _layout_and_tag(text: str) -> tuple[Path, str | None]:
    """`LAYOUT[:TAG]`, as skopeo's oci: transport writes it."""
    path, sep, tag = text.rpartition(":")
    if sep and path and "/" not in tag:
        return Path(path), tag
    return Path(text), None


def image_build(args: argparse.Namespace) -> None:
    from ai_platform.image.base import fetch
    from ai_platform.image.build import build
    from ai_platform.image.layout import OciLayout
    from ai_platform.image.stage import iso

    model_dir = Path(args.model_dir)
    if not model_dir.is_dir():
        raise PlatformError(f"{model_dir}: not a folder")
    name = args.name or model_dir.name.lower()
    layout = OciLayout(args.out)
    mtime = args.mtime if args.mtime is not None else int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    started = time.monotonic()
    base = fetch(layout, args.base) if args.base else None
    built = build(
        layout,
        model_dir,
        name,
        created=iso(mtime),
        mtime=mtime,
        tags=[args.tag],
        annotations={"org.opencontainers.image.title": name},
        base=base,
    )
    result = {
        "digest": built.digest,
        "layout": str(layout.root),
        "tag": args.tag,
        "layers": built.layers,
        "bytes_written": built.bytes_written,
        "seconds": round(time.monotonic() - started, 3),
    }
    reused = sum(layer["reused"] for layer in built.layers)
    _emit(
        args,
        result,
        f"{built.digest}\n{len(built.layers)} layers ({reused} reused), "
        f"{built.bytes_written:,} bytes written to {layout.root}",
    )


def image_push(args: argparse.Namespace) -> None:
    from ai_platform.image.layout import OciLayout
    from ai_platform.image.registry import Reference, push

    path, tag = _layout_and_tag(args.layout)
    done = push(OciLayout(path), tag, Reference.parse(args.ref), insecure=args.insecure, chunk_size=args.chunk_size)
    _emit(
        args,
        {
            "digest": done.digest,
            "ref": args.ref,
            "blobs_sent": done.blobs_sent,
            "blobs_skipped": done.blobs_skipped,
            "bytes_sent": done.bytes_sent,
        },
        f"{args.ref}@{done.digest}: {done.blobs_sent} blobs sent ({done.bytes_sent:,} bytes), "
        f"{done.blobs_skipped} already there",
    )


def image_pull(args: argparse.Namespace) -> None:
    from ai_platform.image.layout import OciLayout
    from ai_platform.image.registry import Reference, pull

    path, tag = _layout_and_tag(args.layout)
    done = pull(Reference.parse(args.ref), OciLayout(path), tag, insecure=args.insecure)
    _emit(
        args,
        {
            "digest": done.digest,
            "layout": str(path),
            "blobs_fetched": done.blobs_sent,
            "blobs_skipped": done.blobs_skipped,
            "bytes": done.bytes_sent,
        },
        f"{done.digest}: {done.blobs_sent} blobs fetched ({done.bytes_sent:,} bytes) into {path}",
    )


def _mask(text: str) -> str:
    """All but the last 4 characters hidden (separators kept): a scanner must not echo what it found."""
    keep = len(text) - 4
    return "".join("*" if i < keep and ch.isalnum() else ch for i, ch in enumerate(text))


def guard_scan(args: argparse.Namespace) -> None:
    from ai_platform.evaluation.injection import InjectionClassifier, combine, injection_signals
    from ai_platform.evaluation.pii import find_pii

    if (args.text is None) == (args.file is None):
        raise PlatformError("give exactly one of --text T or FILE ('-' reads stdin)")
    if args.text is not None:
        text = args.text
    elif args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise PlatformError(f"cannot read {args.file}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise PlatformError(f"{args.file} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    findings = [{"kind": f.kind, "start": f.start, "end": f.end, "masked": _mask(f.text)} for f in find_pii(text)]
    signals = injection_signals(text)
    result: dict[str, Any] = {
        "pii_count": len(findings),
        "pii": findings,
        "injection_score": round(combine([w for _, w in signals]), 6),
        "injection_signals": [{"rule": name, "weight": weight} for name, weight in signals],
    }
    if args.injection_model:
        result["classifier_score"] = round(InjectionClassifier.from_path(args.injection_model).score(text), 6)
    lines = [f"pii: {len(findings)} finding(s)"]
    lines += [f"  {f['kind']:<15} {f['start']}-{f['end']}  {f['masked']}" for f in findings]
    lines.append(f"injection score: {result['injection_score']:.3f}")
    lines += [f"  {s['rule']:<32} {s['weight']:.2f}" for s in result["injection_signals"]]
    if "classifier_score" in result:
        lines.append(f"classifier score: {result['classifier_score']:.3f}")
    _emit(args, result, "\n".join(lines))


def feedback_ingest(args: argparse.Namespace) -> int:
    from ai_platform.feedback.ingest import ingest_file
    from ai_platform.warehouse import Warehouse

    warehouse = Warehouse(_warehouse_path(args))
    reports, errors = [], []
    for name in args.files:  # one unreadable file does not stop the others; it makes the exit 1
        try:
            reports.append(ingest_file(Path(name), warehouse))
        except PlatformError as exc:
            errors.append({"file": name, "error": str(exc)})
            print(f"error: {exc}", file=sys.stderr)
    lines = []
    for report in reports:  # quarantined rows are a result, not a failure: they are reported
        lines.append(report.summary())
        lines += [f"  {count:>8}  {reason}" for reason, count in report.reasons.items()]
    if reports or args.json:
        _emit(args, {"files": [r.to_dict() for r in reports], "errors": errors}, "\n".join(lines))
    return 1 if errors else 0


def _home(args: argparse.Namespace) -> Path:
    home = getattr(args, "home", None) or os.environ.get("AI_PLATFORM_HOME")
    if not home:
        raise PlatformError("no platform home: pass --home DIR or set AI_PLATFORM_HOME")
    return Path(home)


def serve(args: argparse.Namespace) -> None:
    from ai_platform.serving.gateway import serve as run_gateway

    home = _home(args)
    print(f"gateway on http://{args.host}:{args.port} (state in {home}/rollout); Ctrl-C stops it", file=sys.stderr)
    run_gateway(home, args.host, args.port)


def rollout_rollback(args: argparse.Namespace) -> None:
    from ai_platform.backend import for_config
    from ai_platform.specs import pinned_spec

    snap = pinned_spec(_home(args), args.model)
    done = for_config(snap.platform.config).rollback(snap, lambda m: print(m, file=sys.stderr))
    _emit(
        args,
        {"model": args.model, "color": done.color, "image": done.image, "bundle": done.bundle},
        f"{args.model}: {done.image} live on {done.color}",
    )


def rollout_stop(args: argparse.Namespace) -> None:
    from ai_platform.rollout.local import stop

    stop(_home(args), args.model, log=lambda m: print(m, file=sys.stderr))
    _emit(args, {"model": args.model, "stopped": True}, f"{args.model}: stopped")


def rollout_render(args: argparse.Namespace) -> None:
    import yaml

    from ai_platform.config import load_platform
    from ai_platform.rollout.kubernetes import render

    platform = load_platform(
        Path(args.repo), home=Path(os.environ.get("AI_PLATFORM_HOME") or Path(args.repo) / ".state")
    )
    spec = platform.model(args.model)
    digest = args.image_digest or "sha256:" + "0" * 64
    image_ref = args.image or f"registry.example.com/{spec.name}@{digest}"
    manifests = render(platform, spec, image_ref, args.bundle or "", args.color, args.live or args.color)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for manifest in manifests:
        path = out / f"{manifest['kind'].lower()}-{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(manifest, sort_keys=False))
        written.append(str(path))
    _emit(args, {"files": written}, "\n".join(written))


def runtime_show(args: argparse.Namespace) -> None:
    from ai_platform.serving.runtime import ALL_SCHEMES, probe, title
    from ai_platform.serving.vllm import SERVE_PYTHON

    runtime = probe(Path(args.python) if args.python else SERVE_PYTHON)
    schemes = {s: runtime.missing(s) for s in ALL_SCHEMES}
    lines = [runtime.describe()]
    lines += [
        f"  {'serves ' if why is None else 'cannot '} {title(s)}{'' if why is None else ': ' + why}"
        for s, why in schemes.items()
    ]
    _emit(
        args,
        {
            **runtime.as_record(),
            "serves": [s for s, why in schemes.items() if why is None],
            "missing": {s: why for s, why in schemes.items() if why},
        },
        "\n".join(lines),
    )


# ---------------------------------------------------------------- parser


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="ai-platform", description=__doc__.splitlines()[0])
    areas = top.add_subparsers(dest="area", required=True, metavar="AREA")

    def command(
        area: argparse._SubParsersAction[argparse.ArgumentParser], name: str, handler: Handler, help: str
    ) -> argparse.ArgumentParser:
        p = area.add_parser(name, help=help, description=help)
        p.set_defaults(handler=handler)
        p.add_argument("--json", action="store_true", help="print a machine-readable result on stdout")
        return p

    demo = areas.add_parser("demo", help="the offline demo").add_subparsers(dest="command", required=True)
    p = command(demo, "init", demo_init, "build the offline demo platform repo (tiny trained model included)")
    p.add_argument("dir")
    p.add_argument("--seed", type=int, default=0)

    config = areas.add_parser("config", help="platform.yaml and model specs").add_subparsers(
        dest="command", required=True
    )
    p = command(config, "validate", config_validate, "validate platform.yaml and every models/*.yaml")
    p.add_argument("repo", help="the platform repo (a folder)")
    p.add_argument("--ref", help="validate this commit instead of the working tree")

    wh = areas.add_parser("warehouse", help="the DuckDB warehouse").add_subparsers(dest="command", required=True)
    p = command(wh, "migrate", warehouse_migrate, "apply pending migrations")
    p.add_argument("--warehouse", help="the DuckDB file (default: $AI_PLATFORM_HOME/warehouse.duckdb)")

    weights = areas.add_parser("weights", help="weights verification").add_subparsers(dest="command", required=True)
    p = command(weights, "verify", weights_verify, "validate safetensors headers and hash every file and tensor")
    p.add_argument("dir")
    p.add_argument("--manifest", help="a trusted manifest to hold the weights to")
    p.add_argument("--reference", help="a base model's manifest: report the share of identical tensors")
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

    prompts = areas.add_parser("prompts", help="the .prompt DSL").add_subparsers(dest="command", required=True)
    p = command(prompts, "compile", prompts_compile, "compile .prompt files; errors as path:line:col: message")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--out", help="write each compiled prompt as DIR/<name>.json")
    p = command(prompts, "render", prompts_render, "print a prompt's messages and request body for given variables")
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable (repeatable); non-string types are read as JSON",
    )
    p.add_argument("--model", default="model", help="the model name to put in the request body")

    image = areas.add_parser("image", help="OCI model images").add_subparsers(dest="command", required=True)
    p = command(image, "build", image_build, "write a model folder as a reproducible OCI image layout")
    p.add_argument("model_dir", metavar="MODEL_DIR")
    p.add_argument("--out", required=True, metavar="LAYOUT", help="the OCI image layout folder (created if missing)")
    p.add_argument("--name", help="files go under /models/NAME/ (default: the folder's name)")
    p.add_argument("--tag", default="latest")
    p.add_argument("--mtime", type=int, help="file times, seconds since the epoch (default: $SOURCE_DATE_EPOCH or 0)")
    p.add_argument(
        "--base",
        metavar="REF@sha256:DIGEST",
        help="an image to stand on, e.g. busybox for a KServe modelcar (pulled into LAYOUT)",
    )
    transfers = (
        ("push", image_push, "push LAYOUT[:TAG] to REF over the distribution API"),
        ("pull", image_pull, "pull REF into LAYOUT[:TAG], every blob checked"),
    )
    for name, handler, help_text in transfers:
        p = command(image, name, handler, help_text)
        if name == "push":
            p.add_argument("layout", metavar="LAYOUT[:TAG]")
            p.add_argument("ref", metavar="REF", help="HOST[:PORT]/REPOSITORY[:TAG]")
            p.add_argument("--chunk-size", type=int, help="upload in chunks of this many bytes (default: one stream)")
        else:
            p.add_argument("ref", metavar="REF", help="HOST[:PORT]/REPOSITORY[:TAG|@DIGEST]")
            p.add_argument("layout", metavar="LAYOUT[:TAG]")
        p.add_argument("--insecure", action="store_true", help="plain HTTP (loopback registries are plain already)")

    guard = areas.add_parser("guard", help="PII and prompt-injection checks").add_subparsers(
        dest="command", required=True
    )
    p = command(guard, "scan", guard_scan, "PII entities and prompt-injection score of a text (exits 0 on findings)")
    p.add_argument("file", nargs="?", metavar="FILE", help="the text to scan ('-' for stdin)")
    p.add_argument("--text", help="scan this text instead of a file")
    p.add_argument(
        "--injection-model",
        metavar="DIR",
        default=os.environ.get("AI_PLATFORM_INJECTION_MODEL") or None,
        help="a local Hugging Face text-classification model for a second injection score "
        "(default: $AI_PLATFORM_INJECTION_MODEL)",
    )

    feedback = areas.add_parser("feedback", help="reviewer labels").add_subparsers(dest="command", required=True)
    p = command(
        feedback,
        "ingest",
        feedback_ingest,
        "validate label files (CSV, JSONL, Parquet) into the warehouse; bad rows are quarantined",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--warehouse", help="the DuckDB file (default: $AI_PLATFORM_HOME/warehouse.duckdb)")

    p = areas.add_parser("serve", help="the gateway", description="the gateway: prompts as functions, OpenAI API")
    p.set_defaults(handler=serve)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")

    rollout = areas.add_parser("rollout", help="blue/green rollouts").add_subparsers(dest="command", required=True)
    p = command(rollout, "rollback", rollout_rollback, "return a model to its previous image and prompts")
    p.add_argument("model")
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p = command(rollout, "stop", rollout_stop, "stop a model's live color on this machine")
    p.add_argument("model")
    p.add_argument("--home", help="the platform home (default: $AI_PLATFORM_HOME)")
    p = command(rollout, "render", rollout_render, "write a model's Kubernetes manifests (one YAML file each)")
    p.add_argument("model")
    p.add_argument("--repo", required=True, help="the platform repo (its working tree)")
    p.add_argument("--out", required=True)
    p.add_argument("--image", help="the model image reference (default: a placeholder pinned by digest)")
    p.add_argument("--image-digest", help="sha256:... for the placeholder reference")
    p.add_argument("--bundle", help="the prompt bundle digest, recorded as an annotation")
    p.add_argument("--color", default="blue", choices=("blue", "green"))
    p.add_argument("--live", choices=("blue", "green"), help="the color the Service selects (default: --color)")

    runtime = areas.add_parser("runtime", help="what this machine's vLLM can serve").add_subparsers(
        dest="command", required=True
    )
    p = command(
        runtime,
        "show",
        runtime_show,
        "probe the serve environment: kernel library, quantization ops, the schemes it serves",
    )
    p.add_argument("--python", help="the serve environment's interpreter (default: .venvs/serve/bin/python)")

    p = areas.add_parser("sql", help="read-only query for analysts", description="read-only query for analysts")
    p.set_defaults(handler=sql)
    p.add_argument("query")
    p.add_argument("--warehouse", help="the DuckDB file (default: $AI_PLATFORM_HOME/warehouse.duckdb)")
    p.add_argument("--json", action="store_true", help="rows as a JSON array of objects")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code = args.handler(args)
    except PlatformError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `| head` closed stdout: not an error of ours, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
