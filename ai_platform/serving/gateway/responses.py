"""Error answers in the OpenAI API's shape: `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

import json

from starlette.responses import JSONResponse

from ai_platform.errors import GatewayRefusal

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable",
}


def error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error in the OpenAI API's shape: message, type, param, code."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def error_event(status: int, message: str) -> bytes:
    """The same error as the last event of a stream that had started (its status line went out already)."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return f"data: {json.dumps(body)}\n\n".encode()


def refused(exc: GatewayRefusal) -> JSONResponse:
    """The answer to a refused request."""
    return error(exc.status, str(exc), param=exc.param, code=exc.code, headers=exc.headers)
