"""Harvester's SQL, installed as package ``app.sql`` (pyproject maps this folder onto it).

No code: the package exists so migrations (schema/), re-appliable trigger files (triggers/) and the
queries (queries/) ship inside the wheel and are read with importlib.resources (app/db/migrate.py).
"""
