"""The inbox sensor: new or changed label files in the inbox request an `ingest_feedback` run.

The inbox is platform.yaml's `feedback.inbox` on the tracked branch, under the
platform home. The cursor lists the files seen as (name, size, mtime_ns,
sha256); the run key is the hash of the new files' contents, so a tick that
sees the same new files again (a retried tick, a renamed copy) asks for nothing
more. Ingestion itself is idempotent, so a run too many would add nothing.
"""

from __future__ import annotations

import dagster as dg

from ai_platform.changes import shown
from ai_platform.errors import PlatformError
from ai_platform.feedback.inbox import SETTLE_S, already_ingested, run_key, scan
from assets import ingest_feedback
from assets.resources import PlatformRepoResource


@dg.sensor(
    target=ingest_feedback,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests ingest_feedback when new or changed label files land in the feedback inbox; the"
    " feedback_automation sensor then retrains each model's trust model.",
)
def inbox_sensor(
    context: dg.SensorEvaluationContext, platform_repo: PlatformRepoResource
) -> dg.SensorResult | dg.SkipReason:
    branch = platform_repo.branch
    try:
        # The git sensor keeps a remote's mirror fresh; this one only reads the branch it has.
        site = platform_repo.site()
        inbox = site.state(site.config.feedback.inbox)
    except PlatformError as exc:
        return dg.SkipReason(f"cannot read the inbox setting from {shown(platform_repo.path)}@{branch}: {exc}")
    if not inbox.is_dir():
        return dg.SkipReason(f"inbox {inbox} does not exist yet")
    try:
        seen = scan(inbox, context.cursor)
    except PlatformError as exc:  # keep the cursor: the next tick looks again
        return dg.SkipReason(f"cannot scan inbox {inbox}: {exc}")
    waiting = f"; {len(seen.settling)} still being written (changed < {SETTLE_S:.0f} s ago)" if seen.settling else ""
    if seen.refused:  # symlinks, FIFOs: never opened, so never read into the warehouse
        context.log.warning(f"inbox {inbox}: refused {'; '.join(seen.refused)}")
        names = ", ".join(entry.rsplit(": ", 2)[0] for entry in seen.refused)
        waiting += f"; {len(seen.refused)} refused (not regular files): {names}"
    if not seen.files:
        return dg.SkipReason(f"inbox {inbox} has no label files (*.csv, *.jsonl, *.parquet){waiting}")
    cursor = seen.cursor()
    new = seen.new_since(context.cursor)
    if new:  # a new instance's empty cursor: files the warehouse already ingested are not new
        done = already_ingested(platform_repo.platform(), [f.sha256 for f in new])
        new = [f for f in new if f.sha256 not in done]
        waiting += f"; {len(done)} already ingested" if done else ""
    if not new:
        skip = dg.SkipReason(f"no new or changed label files in {inbox} ({len(seen.files)} seen){waiting}")
        return dg.SensorResult(skip_reason=skip, cursor=cursor) if cursor != context.cursor else skip
    names = ", ".join(f.name for f in new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
    context.log.info(f"{len(new)} new label file(s) in {inbox}: {names}")
    request = dg.RunRequest(run_key=run_key(new), tags={"ai_platform/inbox_new_files": str(len(new))})
    return dg.SensorResult(run_requests=[request], cursor=cursor)
