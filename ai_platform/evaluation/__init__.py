"""Canary evaluation: the eval client, metrics, gates and the report."""
