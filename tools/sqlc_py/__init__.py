"""Project-owned sqlc codegen plugin that writes typed psycopg 3 query functions (see plugin.py)."""
