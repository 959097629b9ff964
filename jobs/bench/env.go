package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/kb"
)

// AppName is the application_name of the bench's connections, so that
// they can be told apart in pg_stat_activity.
const AppName = "gb bench"

// env is what one Run creates: a traced pool, users, a dataset and River
// queues, all named with the run's tag and deleted by cleanup.
type env struct {
	o       Options
	tag     string
	pool    *pgxpool.Pool
	tracer  *Tracer
	cluster *Cluster
	remote  string // why the cluster's CPU is not measured
	dataset string
	users   []int64
	queues  []string
	logger  *slog.Logger
}

// newEnv opens the traced pool and creates the dataset and users.
func newEnv(ctx context.Context, o Options) (*env, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e := &env{o: o, tag: hex.EncodeToString(b), tracer: NewTracer(), logger: o.Logger}
	pool, err := db.Open(ctx, db.PoolConfig{URL: o.URL, MaxConns: o.Pool,
		BeforeConnect: func(ctx context.Context, cc *pgx.ConnConfig) error {
			cc.RuntimeParams["application_name"] = AppName
			return e.tracer.Install(ctx, cc)
		}})
	if err != nil {
		return nil, err
	}
	e.pool = pool
	e.cluster, e.remote = FindCluster(ctx, pool, o.PostgresPID)
	e.dataset = "gb_bench_" + e.tag
	if _, err := kb.Load(ctx, pool, e.dataset, []kb.Document{{Source: "gb bench", Title: "gb bench",
		Body: "A document of the benchmark's own dataset, so that its searches find nothing."}}); err != nil {
		e.cleanup()
		return nil, fmt.Errorf("error creating the bench's dataset: %w", err)
	}
	if err := e.createUsers(ctx, o.usersNeeded()); err != nil {
		e.cleanup()
		return nil, err
	}
	return e, nil
}

// createUsers creates n users of the bench's own.
func (e *env) createUsers(ctx context.Context, n int) error {
	for i := range n {
		name := fmt.Sprintf("gb_bench_%s_%d", e.tag, i)
		if _, err := jobs.CreateKey(ctx, e.pool, name); err != nil {
			return err
		}
		id, err := jobs.UserID(ctx, e.pool, name)
		if err != nil {
			return err
		}
		e.users = append(e.users, id)
	}
	return nil
}

// queue names a River queue of the bench's own.
func (e *env) queue(name string) string {
	q := fmt.Sprintf("gb_bench_%s_%s", e.tag, name)
	if !slices.Contains(e.queues, q) {
		e.queues = append(e.queues, q)
	}
	return q
}

// agentConfig is the config of a bench agent on queue, with the
// operator's step timeout and the slice asked for.
func (e *env) agentConfig(queue string) jobs.Config {
	c := AgentConfig(queue, e.o.MaxWorkers)
	c.StepTimeout, c.Slice = e.o.StepTimeout, e.o.Slice
	return c
}

// river is the bare River client of a baseline on queue name.
func (e *env) river(name string) RiverConfig {
	return RiverConfig{Queue: e.queue(name), Cooldown: jobs.FetchCooldownDefault, Poll: jobs.FetchPollDefault,
		MaxWorkers: e.o.MaxWorkers, Logger: e.logger}
}

// cleanup deletes what the run created, in one transaction: its users
// (and with them their runs, steps, events, inboxes and messages), the
// jobs and queues of its River queues, and its dataset; then closes the
// pool.
func (e *env) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		for _, q := range []struct {
			sql string
			arg any
		}{
			{"DELETE FROM gb_users WHERE id = ANY($1)", e.users},
			{"DELETE FROM river_job WHERE queue = ANY($1)", e.queues},
			{"DELETE FROM river_queue WHERE name = ANY($1)", e.queues},
			{"DELETE FROM gb_kb_datasets WHERE name = $1", e.dataset},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.arg); err != nil {
				return fmt.Errorf("error cleaning up (%s): %w", q.sql, err)
			}
		}
		return nil
	})
	if err != nil {
		e.logger.Error("the bench could not delete what it created", "tag", e.tag, "err", err)
	}
	e.pool.Close()
}

// usage is what a measured phase cost.
type usage struct {
	cpu, pg time.Duration
	trips   TraceCounts
}

// mark is the counters at the start of a phase.
type mark struct {
	e     *env
	cpu   time.Duration
	pg    time.Duration
	trips TraceCounts
}

func (e *env) mark() mark {
	m := mark{e: e, cpu: processCPU(), trips: e.tracer.Snapshot()}
	if e.cluster != nil {
		m.pg = e.cluster.CPU()
	}
	return m
}

// since is what was used from m until now.
func (m mark) since() usage {
	u := usage{cpu: processCPU() - m.cpu, trips: m.e.tracer.Snapshot().Sub(m.trips)}
	if m.e.cluster != nil {
		u.pg = m.e.cluster.CPU() - m.pg
	}
	return u
}
