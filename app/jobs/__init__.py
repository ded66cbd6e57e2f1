"""Procrastinate job modules, each with its own ``blueprint`` (the worker's app adds them explicitly)."""
