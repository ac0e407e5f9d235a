"""maintain_warehouse: the warehouse's daily housekeeping (a DuckLake's files merged, old snapshots expired)."""

import dagster as dg

from assets.resources import PlatformRepoResource


class MaintenanceConfig(dg.Config):
    keep_days: int = 7  # how far back time travel reaches


@dg.op(description="Write inlined rows out, merge small files, expire snapshots older than keep_days, delete files.")
def maintain(context: dg.OpExecutionContext, config: MaintenanceConfig, platform_repo: PlatformRepoResource) -> None:
    warehouse = platform_repo.platform().warehouse()
    done = warehouse.maintain(config.keep_days)
    context.log.info(f"{warehouse.location}: {done}")
    context.add_output_metadata({k: dg.MetadataValue.int(v) for k, v in done.items() if isinstance(v, int)})


@dg.job(
    description="The warehouse's housekeeping: on a DuckLake, compaction and snapshot expiry; on a file, a checkpoint."
)
def maintain_warehouse() -> None:
    maintain()


daily_maintenance = dg.ScheduleDefinition(job=maintain_warehouse, cron_schedule="0 3 * * *", execution_timezone="UTC")
