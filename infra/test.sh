#!/usr/bin/env bash
# test.sh runs every check: go vet, the whole test suite with the race
# detector, against the throwaway Postgres of infra/pg.sh (or DATABASE_URL),
# then each fuzz target for GB_FUZZTIME (default 20s; 0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
DATABASE_URL=$(infra/pg.sh start)
export DATABASE_URL
go vet ./...
go test -race -count=1 -timeout 20m "$@" ./...
fuzztime=${GB_FUZZTIME:-20s}
if [ "$fuzztime" != "0" ]; then
  # Each target also runs its seed corpus (testdata/fuzz) in the suite above.
  go test -run XXX -fuzz '^FuzzRequests$' -fuzztime "$fuzztime" ./infra/httpapi/
  go test -run XXX -fuzz '^FuzzToolArgs$' -fuzztime "$fuzztime" ./jobs/
  # One target a document format, briefly (GB_DOCFUZZTIME, default 5s each).
  for target in FuzzPDF FuzzDOCX FuzzPPTX FuzzXLSX FuzzCSV FuzzHTML; do
    go test -run XXX -fuzz "^$target\$" -fuzztime "${GB_DOCFUZZTIME:-5s}" ./jobs/doctext/
  done
fi
