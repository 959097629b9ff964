package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/dbtest"
)

// TestStackSizesItsPoolWithGBDBPool: gb dev and gb worker open
// GB_DB_POOL connections and refuse a bad GB_MAX_WORKERS or GB_DB_POOL
// before they connect.
func TestStackSizesItsPoolWithGBDBPool(t *testing.T) {
	t.Setenv(config.EnvDatabaseURL, dbtest.NewURL(t))
	t.Setenv(config.EnvMaxWorkers, "300")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		pool string
		want int32
	}{{"6", 6}, {"", config.DBPoolDefault}} {
		t.Setenv(config.EnvDBPool, tc.pool)
		s, err := startStack(context.Background(), logger, messengerPostgres)
		if err != nil {
			t.Fatal(err)
		}
		got := s.pool.Config().MaxConns
		s.stop()
		if got != tc.want {
			t.Fatalf("GB_DB_POOL %q: pool of %d connections, want %d", tc.pool, got, tc.want)
		}
	}
	for _, bad := range []struct{ name, value string }{{config.EnvMaxWorkers, "0"}, {config.EnvDBPool, "1001"}} {
		t.Setenv(bad.name, bad.value)
		if _, err := startStack(context.Background(), logger, messengerPostgres); err == nil || !strings.Contains(err.Error(), bad.name+": ") {
			t.Errorf("%s=%s: %v", bad.name, bad.value, err)
		}
		t.Setenv(config.EnvMaxWorkers, "300")
		t.Setenv(config.EnvDBPool, "6")
	}
}
