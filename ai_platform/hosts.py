"""Facts about host names that both the config reader and the registry client need (so neither imports the other)."""

from __future__ import annotations

import ipaddress


def loopback(hostname: str) -> bool:
    """Whether `hostname` (no port, no brackets) is this machine: localhost, 127.0.0.0/8 or ::1."""
    if hostname.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False
