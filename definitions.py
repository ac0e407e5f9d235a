"""The one Definitions object: every asset, check, sensor, job and resource of the platform."""

import dagster as dg

from assets import all_assets, all_checks, ingest_feedback, learn_from_feedback, ship_model
from assets.execution import EXECUTION, EXECUTOR, LOCATION
from assets.maintenance import daily_maintenance, maintain_warehouse
from assets.resources import default_resources
from sensors import all_sensors

defs = dg.Definitions(
    assets=all_assets,
    asset_checks=all_checks,
    jobs=[ship_model, ingest_feedback, learn_from_feedback, maintain_warehouse],
    schedules=[daily_maintenance],
    sensors=all_sensors,
    resources=default_resources(EXECUTION, LOCATION),
    executor=EXECUTOR,  # as the backend platform.yaml's execution.target names says: processes here, or pods
)
