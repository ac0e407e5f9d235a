"""OCI primitives below every stage: image layouts on disk, the distribution-API client, and the artifact
store kept in a registry. Nothing here knows platform.yaml or a stage."""
