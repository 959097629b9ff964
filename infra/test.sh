#!/usr/bin/env bash
# test.sh runs every check: go vet and the whole test suite with the race
# detector, against the throwaway Postgres of infra/pg.sh (or DATABASE_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
DATABASE_URL=$(infra/pg.sh start)
export DATABASE_URL
go vet ./...
go test -race -count=1 -timeout 20m "$@" ./...
