"""One dynamic partition per model spec (`models/<name>.yaml`), added and removed by the git sensor."""

import dagster as dg

MODELS = "models"
models_partitions = dg.DynamicPartitionsDefinition(name=MODELS)
