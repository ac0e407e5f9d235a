"""`ai-platform prompts`: compile and render `.prompt` files (docs/prompt-language.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ai_platform.cli.common import Areas, command, emit
from ai_platform.errors import PlatformError


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
    emit(args, {"ok": not failed, "prompts": results}, "\n".join(lines))
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
    emit(args, {"version": compiled.version, "body": body}, "\n".join(human))


def add(areas: Areas) -> None:
    prompts = areas.add_parser("prompts", help="the .prompt DSL").add_subparsers(dest="command", required=True)
    p = command(
        prompts,
        "compile",
        prompts_compile,
        "compile .prompt files; errors as path:line:col: message",
        ("ai-platform prompts compile prompts/*.prompt", "ai-platform prompts compile prompts/*.prompt --out build"),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="a .prompt file (docs/prompt-language.md)")
    p.add_argument("--out", metavar="DIR", help="write each compiled prompt as DIR/<name>.json (default: none)")
    p = command(
        prompts,
        "render",
        prompts_render,
        "print a prompt's messages and request body for given variables",
        ("ai-platform prompts render prompts/contract_review.prompt --var input_pdf_text='1. No confidentiality.'",),
    )
    p.add_argument("file", metavar="FILE", help="the .prompt file")
    p.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable (repeatable); non-string types are read as JSON",
    )
    p.add_argument("--model", default="model", help="the model name to put in the request body")
