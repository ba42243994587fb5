"""Errors the service answers with a 4xx: each carries its HTTP status and one clear message."""
from __future__ import annotations


class ServiceError(Exception):
    status = 400

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def as_json(self) -> dict:
        return {"error": self.message, **({"field": self.field} if self.field else {})}


class BadRequest(ServiceError):
    status = 400


class StateTooLong(ServiceError):
    status = 413


class NotFound(ServiceError):
    status = 404


class Forbidden(ServiceError):
    status = 403


class Conflict(ServiceError):
    """The request is fine but cannot be done now (a reload already running, a stale index)."""

    status = 409


class Overloaded(ServiceError):
    """Too much work is queued: come back in `retry_after_s` seconds (sent as Retry-After)."""

    status = 503

    def __init__(self, message: str, retry_after_s: int, field: str | None = None) -> None:
        super().__init__(message, field)
        self.retry_after_s = retry_after_s
