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


def service_host(name: str, namespace: str) -> str:
    """A Kubernetes Service's in-cluster host name, `<name>.<namespace>.svc`: every pod's resolv.conf searches
    `<ns>.svc.<domain> svc.<domain> <domain>`, so it resolves whatever the cluster domain is (never `cluster.local`
    assumed: a cluster with a custom domain would resolve none of them)."""
    return f"{name}.{namespace}.svc"
