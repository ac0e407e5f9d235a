"""Rollout: blue/green on the local gateway, and Kubernetes manifests."""
