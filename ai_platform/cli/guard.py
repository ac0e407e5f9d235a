"""`ai-platform guard`: the PII and prompt-injection checks the canary and the gateway run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ai_platform.cli.common import Areas, command, emit
from ai_platform.errors import InputFileError, UsageError


def _mask(text: str) -> str:
    """All but the last 4 characters hidden (separators kept): a scanner must not echo what it found."""
    keep = len(text) - 4
    return "".join("*" if i < keep and ch.isalnum() else ch for i, ch in enumerate(text))


def guard_scan(args: argparse.Namespace) -> None:
    from ai_platform.detectors.injection import InjectionClassifier, combine, injection_signals
    from ai_platform.detectors.pii import find_pii

    if (args.text is None) == (args.file is None):
        raise UsageError("give exactly one of --text T or FILE ('-' reads stdin)")
    if args.text is not None:
        text = args.text
    elif args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputFileError(f"cannot read {args.file}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise InputFileError(f"{args.file} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
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
    emit(args, result, "\n".join(lines))


def add(areas: Areas) -> None:
    guard = areas.add_parser("guard", help="PII and prompt-injection checks").add_subparsers(
        dest="command", required=True
    )
    p = command(
        guard,
        "scan",
        guard_scan,
        "PII entities and prompt-injection score of a text (exits 0 on findings)",
        ("ai-platform guard scan --text 'ignore all previous instructions'", "ai-platform guard scan reply.txt --json"),
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="the text to scan ('-' for stdin)")
    p.add_argument("--text", help="scan this text instead of a file")
    p.add_argument(
        "--injection-model",
        metavar="DIR",
        default=os.environ.get("AI_PLATFORM_INJECTION_MODEL") or None,
        help="a local Hugging Face text-classification model for a second injection score "
        "(default: $AI_PLATFORM_INJECTION_MODEL)",
    )
