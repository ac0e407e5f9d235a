"""The push receiver: forges' push webhooks, verified, shorten the git sensor's wait (docs/operations.md)."""
