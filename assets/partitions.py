"""One dynamic partition per model spec (`models/<name>.yaml`), added by the model sensor."""

import dagster as dg

models_partitions = dg.DynamicPartitionsDefinition(name="models")
