package bench_test

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs/bench"
)

// allRows are the rows of a run with a scale run.
var allRows = []string{
	bench.RowSteps, bench.RowCPU, bench.RowPGCPU, bench.RowTrips, bench.RowTripsRv, bench.RowTripsGB, bench.RowTripsTx,
	bench.RowCommits, bench.RowPickup50, bench.RowPickup99, bench.RowNext50, bench.RowNext99,
	bench.RowSpawn50, bench.RowSpawn99, bench.RowResume50, bench.RowResume99, bench.RowWake50, bench.RowWake99,
	bench.RowScaleModel, bench.RowScaleOpen, bench.RowScaleUsed, bench.RowScaleRSS, bench.RowScaleWall,
	bench.RowScaleTree50, bench.RowScaleTree99, bench.RowScaleErrors, bench.RowScaleSucceed,
}

// measured is whether a cell holds a figure greater than 0.
func measured(c bench.Cell) bool { return !math.IsNaN(c.Value) && c.Value > 0 }

// nonZero is whether a cell holds a figure other than 0.
func nonZero(c bench.Cell) bool { return !math.IsNaN(c.Value) && c.Value != 0 }

// TestRunMeasuresEveryRow runs the whole bench with tiny sizes on a
// database of its own and checks that the table has every row, each with
// figures that make sense, and that the bench left nothing behind. It
// asserts no duration and no speed.
func TestRunMeasuresEveryRow(t *testing.T) {
	url := dbtest.NewURL(t)
	ctx := context.Background()
	r, err := bench.Run(ctx, bench.Options{URL: url, Runs: 2, Steps: 3, Samples: 10, Trees: 3,
		ModelLatency: 5 * time.Millisecond, MaxWorkers: 20, Pool: 8,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.Print(&out, true); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, name := range allRows {
		row := r.Row(name)
		if row == nil {
			t.Errorf("no row %q", name)
			continue
		}
		if !strings.Contains(out.String(), name) {
			t.Errorf("row %q is not printed", name)
		}
		checkRow(t, r, row)
	}
	if len(r.Rows) != len(allRows) {
		t.Errorf("%d rows, want %d", len(r.Rows), len(allRows))
	}
	for _, want := range []string{"JobGetAvailable", "JobInsertFastMany", "commit"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the verbose statements do not name %s", want)
		}
	}
	checkCleanedUp(t, url)
}

// checkRow checks the figures of one row.
func checkRow(t *testing.T, r *bench.Report, row *bench.Row) {
	t.Helper()
	switch row.Measure {
	case bench.RowTripsGB:
		// River's hop worker sends nothing but begin and commit.
		if !measured(row.GB) || row.Base.Value != 0 {
			t.Errorf("%s: gb %s, River %s (want > 0 and 0)", row.Measure, row.GB.Text, row.Base.Text)
		}
	case bench.RowPickup50, bench.RowPickup99, bench.RowNext50, bench.RowNext99:
		// A step goes through the queue or runs in the job of the one
		// before: one of the two kinds of pickup is measured.
		other := map[string]string{bench.RowPickup50: bench.RowNext50, bench.RowPickup99: bench.RowNext99,
			bench.RowNext50: bench.RowPickup50, bench.RowNext99: bench.RowPickup99}[row.Measure]
		if !measured(row.Base) || !measured(row.GB) && !measured(r.Row(other).GB) {
			t.Errorf("%s: gb %s (and %s), River %s", row.Measure, row.GB.Text, r.Row(other).GB.Text, row.Base.Text)
		}
	case bench.RowSpawn50, bench.RowSpawn99, bench.RowResume50, bench.RowResume99:
		// A commit's (an insert's) time is taken after it returns, by the
		// goroutine that made it: under load the job it inserted may be
		// seen to start first, so the figures are measured but may be
		// below 0.
		if !nonZero(row.GB) || !nonZero(row.Base) {
			t.Errorf("%s: gb %s, baseline %s", row.Measure, row.GB.Text, row.Base.Text)
		}
	case bench.RowScaleTree50, bench.RowScaleTree99:
		if !measured(row.GB) || row.GB.Value > 1 {
			t.Errorf("%s: %s, want a fraction of the wall time", row.Measure, row.GB.Text)
		}
	case bench.RowScaleErrors:
		if row.GB.Value != 0 {
			t.Errorf("%s: %s (%s)", row.Measure, row.GB.Text, row.Baseline)
		}
	case bench.RowScaleSucceed:
		if !measured(row.GB) || row.GB.Value != row.Base.Value {
			t.Errorf("%s: %s of %s", row.Measure, row.GB.Text, row.Base.Text)
		}
	default:
		if !measured(row.GB) || !measured(row.Base) || math.IsNaN(row.Ratio) {
			t.Errorf("%s: gb %s, baseline %s, ratio %v", row.Measure, row.GB.Text, row.Base.Text, row.Ratio)
		}
	}
}

// checkCleanedUp checks that no user, dataset, job or queue of the bench
// is left.
func checkCleanedUp(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, db.PoolConfig{URL: url, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		`SELECT count(*) FROM gb_users WHERE name LIKE 'gb\_bench\_%'`,
		`SELECT count(*) FROM gb_agent_research_runs`,
		`SELECT count(*) FROM gb_kb_datasets WHERE name LIKE 'gb\_bench\_%'`,
		`SELECT count(*) FROM river_job WHERE queue LIKE 'gb\_bench\_%'`,
		`SELECT count(*) FROM river_queue WHERE name LIKE 'gb\_bench\_%'`,
	} {
		var n int
		if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: %d left", q, n)
		}
	}
}

// testWriter sends the logs to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
