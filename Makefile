# Quick start: `make demo` runs Harvester end to end on the embedded PostgreSQL; `make test` runs every test.
.PHONY: demo test lint generate structure

demo:
	@bash scripts/bootstrap.sh
	@.venv/bin/harvester demo

test:
	@bash scripts/bootstrap.sh --test
	@.venv/bin/python -m pytest

lint:
	@bash scripts/bootstrap.sh
	@.venv/bin/ruff check app connectors tests tools bench
	@.venv/bin/mypy
	@.venv/bin/lint-imports
	@.venv/bin/python -m tools.import_cycles

generate:
	@.venv/bin/sqlc generate

structure:
	@.venv/bin/python -m tools.structure write
