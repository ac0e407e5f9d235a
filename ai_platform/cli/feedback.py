"""`ai-platform feedback`: reviewers' label files into the warehouse."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ai_platform.cli.common import WAREHOUSE_HELP, Areas, command, emit, warehouse_at
from ai_platform.errors import PlatformError


def feedback_ingest(args: argparse.Namespace) -> int:
    from ai_platform.feedback.ingest import ingest_file
    from ai_platform.feedback.pending import retry

    warehouse = warehouse_at(args)
    retried = retry(warehouse)  # labels that came before their generations: look again first
    reports, errors = [], []
    for name in args.files:  # one unreadable file does not stop the others; it makes the exit 1
        try:
            reports.append(ingest_file(Path(name), warehouse))
        except PlatformError as exc:
            errors.append({"file": name, "error": str(exc)})
            print(f"error: {exc}", file=sys.stderr)
    lines = [retried.summary()]
    for report in reports:  # quarantined rows are a result, not a failure: they are reported
        lines.append(report.summary())
        lines += [f"  {count:>8}  {reason}" for reason, count in report.reasons.items()]
    if reports or args.json:
        files = [r.to_dict() for r in reports]
        emit(args, {"pending": vars(retried), "files": files, "errors": errors}, "\n".join(lines))
    return 1 if errors else 0


def add(areas: Areas) -> None:
    feedback = areas.add_parser("feedback", help="reviewer labels").add_subparsers(dest="command", required=True)
    p = command(
        feedback,
        "ingest",
        feedback_ingest,
        "validate label files (CSV, JSONL, Parquet) into the warehouse; bad rows are quarantined",
        (
            "ai-platform feedback ingest demo/platform/labels/2026-01-reviewer-a.csv",
            "ai-platform feedback ingest labels/*.jsonl --warehouse demo/state/warehouse.duckdb --json",
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="a label file: CSV (UTF-8 or GB18030), JSONL or Parquet")
    p.add_argument("--warehouse", help=WAREHOUSE_HELP)
