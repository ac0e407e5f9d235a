"""The gateway, one module per concern: routes (app), the request pipeline (pipeline), routing, metrics, the
generation log, label intake, scoring."""

from ai_platform.serving.gateway import keys
from ai_platform.serving.gateway.app import Gateway, create_app, serve

__all__ = ["Gateway", "create_app", "keys", "serve"]
