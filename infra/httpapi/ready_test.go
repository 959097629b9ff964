package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/httpapi"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs"
)

// readyz asks a handler over the pool for /readyz and decodes its answer.
func readyz(t *testing.T, h http.Handler) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("/readyz answered %d %q: %v", rec.Code, rec.Body, err)
	}
	return rec.Code, body
}

// TestReadyzChecksTheDatabaseAndItsSchema: /readyz is 200 on a migrated
// database; 503 naming the migration when the schema is behind this
// version (as between a deploy and its migration), and 503 when the
// database does not answer, with Retry-After each time. /healthz stays
// 200 throughout.
func TestReadyzChecksTheDatabaseAndItsSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	agent, err := jobs.New(jobs.Deps{Pool: pool, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(httpapi.Deps{Service: agent, DBTimeout: 2 * time.Second})
	code, body := readyz(t, h)
	schema, _ := body["schema"].(map[string]any)
	if code != http.StatusOK || body["status"] != "ready" || schema["current"] != schema["needed"] || schema["needed"].(float64) < 25 {
		t.Fatalf("/readyz on a migrated database: %d %v", code, body)
	}

	// The newest migration rolled back in goose's table, as a database the
	// new version was deployed on before its migration ran.
	needed := int64(schema["needed"].(float64))
	if _, err := pool.Exec(ctx, "DELETE FROM goose_db_version WHERE version_id = $1", needed); err != nil {
		t.Fatal(err)
	}
	code, body = readyz(t, h)
	if code != http.StatusServiceUnavailable || body["status"] != "not_ready" ||
		!strings.Contains(body["reason"].(string), "run the migrate function") {
		t.Fatalf("/readyz with migration %d missing: %d %v", needed, code, body)
	}

	// A database that does not answer.
	down := dbtest.NewPool(t)
	downAgent, err := jobs.New(jobs.Deps{Pool: down, Model: &offline.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	dh := httpapi.New(httpapi.Deps{Service: downAgent, DBTimeout: 2 * time.Second})
	code, body = readyz(t, dh)
	if code != http.StatusServiceUnavailable || !strings.Contains(body["reason"].(string), "database does not answer") {
		t.Fatalf("/readyz with the database closed: %d %v", code, body)
	}
	rec := httptest.NewRecorder()
	dh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/healthz with the database closed: %d, want 200 (liveness touches no database)", rec.Code)
	}
}
