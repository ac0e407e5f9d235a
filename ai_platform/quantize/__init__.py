"""AWQ quantization: the workload (quantize environment) and the stage around it (platform)."""
