"""Serving: the vLLM launcher (and, with issue 8, the gateway)."""
