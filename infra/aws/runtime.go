package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/db"
	"github.com/gbresearch/gb/infra/logs"
	"github.com/gbresearch/gb/jobs/llm"
)

// SetupParams say how a function sets itself up.
type SetupParams struct {
	// Getenv reads a setting; nil means os.Getenv.
	Getenv func(string) string
	// AppName is the application_name of the function's database
	// connections (unless DATABASE_URL sets one), so that they can be told
	// apart in pg_stat_activity: gb-api, gb-worker and so on.
	AppName string
	// MaxConns bounds the pool of a function that works no step jobs (the
	// API, the scheduler, migrate); 0 means db.MaxConnsDefault. Working
	// overrides it.
	MaxConns int32
	// Working marks the function that works step jobs (the worker): its
	// pool has GB_DB_POOL connections (config.Config.DBPool).
	Working bool
	// ModelKey makes Setup read OPENAI_SECRET_ARN and GB_SEARCH_SECRET_ARN.
	// Only the function that calls the model and the web (the worker)
	// needs them, and only it may read them.
	ModelKey bool
	// LoadAWS loads the AWS configuration, when the settings need one (a
	// secret to read, IAM database auth, a worker to kick); nil means the
	// SDK's default chain (environment, then the Lambda role).
	LoadAWS func(context.Context) (awssdk.Config, error)
	// Secrets reads secrets; nil means Secrets Manager.
	Secrets SecretGetter
}

// Runtime is what a function builds once per execution environment.
type Runtime struct {
	// Config is the settings, with the secrets they name resolved.
	Config config.Config
	// Pool is the function's pool, kept for the execution environment.
	Pool *pgxpool.Pool
	// Logger is the Lambda logger (see LogLevel and NewLogger); its records
	// carry the ids of the invocation under way (see Begin).
	Logger *slog.Logger
	// AWS is the AWS configuration; nil when the settings need none.
	AWS     *awssdk.Config
	kicker  *Kicker
	current *atomic.Pointer[Invocation]
}

// Setup reads the settings, the secrets they name, and opens the pool. Its
// errors name the variable to fix.
func Setup(ctx context.Context, p SetupParams) (*Runtime, error) {
	getenv := p.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("invalid settings: %w", err)
	}
	level, levelWarning := LogLevel(getenv, cfg.LogLevel)
	rt := &Runtime{Config: cfg, current: &atomic.Pointer[Invocation]{}}
	rt.Logger = newLogger(os.Stdout, getenv(EnvLambdaLogFormat), level, rt.current)
	if levelWarning != "" {
		rt.Logger.Warn(levelWarning, "level", level.String())
	}

	needAWS := cfg.DatabaseSecretARN != "" || (p.ModelKey && (cfg.OpenAISecretARN != "" || cfg.SearchSecretARN != "")) ||
		cfg.DatabaseIAMAuth || cfg.WorkerFunction != ""
	if needAWS {
		load := p.LoadAWS
		if load == nil {
			load = func(ctx context.Context) (awssdk.Config, error) { return awsconfig.LoadDefaultConfig(ctx) }
		}
		ac, err := load(ctx)
		if err != nil {
			return nil, fmt.Errorf("error loading AWS configuration: %w", err)
		}
		rt.AWS = &ac
	}
	workerKeys := p.ModelKey && (cfg.OpenAISecretARN != "" || cfg.SearchSecretARN != "")
	if cfg.DatabaseSecretARN != "" || workerKeys {
		sm := p.Secrets
		if sm == nil {
			sm = secretsmanager.NewFromConfig(*rt.AWS)
		}
		if err := ResolveSecrets(ctx, sm, &rt.Config, p.ModelKey); err != nil {
			return nil, err
		}
	}
	if cfg.WorkerFunction != "" {
		rt.kicker = NewKicker(*rt.AWS, cfg.WorkerFunction)
	}

	var iam func(context.Context, *pgx.ConnConfig) error
	if cfg.DatabaseIAMAuth {
		if rt.AWS.Region == "" {
			return nil, &config.Error{Var: config.EnvDatabaseIAMAuth, Msg: "needs an AWS region (AWS_REGION)"}
		}
		iam = IAMAuth(rt.AWS.Region, rt.AWS.Credentials)
	}
	appName := p.AppName
	pool, err := db.Open(ctx, db.PoolConfig{
		URL:      rt.Config.DatabaseURL,
		MaxConns: p.maxConns(cfg),
		Proxy:    cfg.DatabaseProxy,
		BeforeConnect: func(ctx context.Context, cc *pgx.ConnConfig) error {
			if appName != "" && cc.RuntimeParams["application_name"] == "" {
				cc.RuntimeParams["application_name"] = appName
			}
			if iam != nil {
				return iam(ctx, cc)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	rt.Pool = pool
	if th, ok := rt.Logger.Handler().(*logs.Throttle); ok {
		th.SetProbe(pool.Ping) // the outage ends when the pool reaches the database again
	}
	return rt, nil
}

// maxConns is the size of the function's pool: GB_DB_POOL for the worker,
// MaxConns for the others.
func (p SetupParams) maxConns(cfg config.Config) int32 {
	if p.Working {
		return cfg.DBPool
	}
	return p.MaxConns
}

// Close closes the pool.
func (r *Runtime) Close() {
	if r.Pool != nil {
		r.Pool.Close()
	}
}

// Kick returns the function that wakes the worker, or nil when
// WORKER_FUNCTION_NAME is not set.
func (r *Runtime) Kick() func(context.Context) error {
	if r.kicker == nil {
		return nil
	}
	return r.kicker.Kick
}

// Model returns the model the settings ask for, to call it (the worker).
func (r *Runtime) Model() (llm.Model, error) {
	return r.Config.NewModel(r.Logger)
}

// RecordingModel returns a model that only names the model the worker will
// call, for the functions that start researches but never call a model:
// they need the name for the runs they insert, not the key.
func (r *Runtime) RecordingModel() llm.Model {
	name := ModelName(r.Config)
	if p, ok := r.Config.ModelProfile(name); ok {
		return profiledRecording{recordingModel(name), p}
	}
	return recordingModel(name)
}

// profiledRecording is a recording model that knows the model's profile,
// so that the budgets a research asks for are checked against its prices.
type profiledRecording struct {
	recordingModel
	profile llm.Profile
}

func (m profiledRecording) Profile() llm.Profile { return m.profile }

// ModelName is the name of the model the settings select (see
// config.Config.ModelName): Bedrock's, the OpenAI model's, or the offline
// policy's.
func ModelName(cfg config.Config) string { return cfg.ModelName() }

// ErrNoModelHere is returned by a RecordingModel asked to complete.
var ErrNoModelHere = errors.New("this function only starts researches; the worker calls the model")

type recordingModel string

func (m recordingModel) Name() string { return string(m) }

func (m recordingModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, ErrNoModelHere
}
