"""Admin HTTP API (issue 4): Litestar controllers over the generated queries and app/services."""

from app.api.app import create_app

__all__ = ["create_app"]
