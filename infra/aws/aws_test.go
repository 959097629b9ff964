package aws_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/functions/lambdatest"
	gbaws "github.com/gbresearch/gb/infra/aws"
	"github.com/gbresearch/gb/infra/config"
	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/infra/offline"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestDatabaseURLFromSecret(t *testing.T) {
	t.Parallel()
	rds := `{"username":"gb","password":"p@ss:/w","engine":"postgres","host":"db.abc.eu-west-1.rds.amazonaws.com","port":5432,"dbname":"gb"}`
	for _, tc := range []struct {
		name, base, secret, want, wantErr string
	}{
		{name: "rds secret alone", secret: rds,
			want: "postgres://gb:p%40ss%3A%2Fw@db.abc.eu-west-1.rds.amazonaws.com:5432/gb?sslmode=require"},
		{name: "proxy endpoint from the URL", secret: rds,
			base: "postgres://proxy.proxy-abc.eu-west-1.rds.amazonaws.com:5432/gb?sslmode=verify-full",
			want: "postgres://gb:p%40ss%3A%2Fw@proxy.proxy-abc.eu-west-1.rds.amazonaws.com:5432/gb?sslmode=verify-full"},
		{name: "credentials replace those of the URL", secret: `{"username":"app","password":"s3cret"}`,
			base: "postgres://old:old@h:6543/x", want: "postgres://app:s3cret@h:6543/x"},
		{name: "port as a string and no dbname", secret: `{"username":"u","password":"p","host":"h","port":"6000"}`,
			want: "postgres://u:p@h:6000/postgres?sslmode=require"},
		{name: "a URL secret is used as it is", secret: " postgres://u:p@h/db \n", want: "postgres://u:p@h/db"},
		{name: "no password", secret: `{"username":"u","host":"h"}`, wantErr: "no username or no password"},
		{name: "no host anywhere", secret: `{"username":"u","password":"p"}`, wantErr: "no host"},
		{name: "not JSON", secret: "hunter2", wantErr: "neither a postgres:// URL"},
		{name: "base not a URL", secret: rds, base: "host=x dbname=y", wantErr: "must be a postgres:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gbaws.DatabaseURLFromSecret(tc.base, tc.secret)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if _, err := pgx.ParseConfig(got); err != nil {
				t.Fatalf("pgx cannot parse %q: %v", got, err)
			}
		})
	}
}

func TestOpenAIKeyFromSecret(t *testing.T) {
	t.Parallel()
	for secret, want := range map[string]string{
		"sk-plain\n":                       "sk-plain",
		`{"api_key":"sk-json"}`:            "sk-json",
		`{"OPENAI_API_KEY":"sk-env-name"}`: "sk-env-name",
	} {
		if got, err := gbaws.OpenAIKeyFromSecret(secret); err != nil || got != want {
			t.Errorf("%q: got %q, %v", secret, got, err)
		}
	}
	for _, bad := range []string{"", `{"other":"x"}`, `{"api_key":1}`} {
		if _, err := gbaws.OpenAIKeyFromSecret(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// fakeSecrets is a Secrets Manager holding a few secrets; it records what
// was read.
type fakeSecrets struct {
	mu     sync.Mutex
	values map[string]string
	read   []string
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput,
	_ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := awssdk.ToString(in.SecretId)
	f.read = append(f.read, id)
	v, ok := f.values[id]
	if !ok {
		return nil, errors.New("ResourceNotFoundException: secret not found")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: &v}, nil
}

func TestResolveSecretsNamesTheVariable(t *testing.T) {
	t.Parallel()
	sm := &fakeSecrets{values: map[string]string{"arn:db": `{"username":"u"}`}}
	cfg := config.Config{DatabaseSecretARN: "arn:db"}
	err := gbaws.ResolveSecrets(context.Background(), sm, &cfg, false)
	if err == nil || !strings.HasPrefix(err.Error(), config.EnvDatabaseSecretARN+": ") {
		t.Fatalf("got %v", err)
	}
	cfg = config.Config{DatabaseURL: "postgres://h/db", OpenAISecretARN: "arn:missing"}
	err = gbaws.ResolveSecrets(context.Background(), sm, &cfg, true)
	if err == nil || !strings.HasPrefix(err.Error(), config.EnvOpenAISecretARN+": ") {
		t.Fatalf("got %v", err)
	}
}

func fakeAWS(endpoint string) awssdk.Config {
	return awssdk.Config{
		Region:       "eu-west-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: awssdk.String(endpoint),
	}
}

func TestKickInvokesAsynchronously(t *testing.T) {
	t.Parallel()
	srv := lambdatest.NewLambdaAPI(t)
	k := gbaws.NewKicker(fakeAWS(srv.URL), "gb-worker")
	if err := k.Kick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls(); len(got) != 1 || got[0].Path != "/2015-03-31/functions/gb-worker/invocations" ||
		got[0].InvocationType != "Event" || got[0].Payload["source"] != gbaws.SourceKick {
		t.Fatalf("got %+v, want one asynchronous invocation of gb-worker", got)
	}
	srv.Fail(true)
	if err := k.Kick(context.Background()); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("a refused kick should say why: %v", err)
	}
	if err := (&gbaws.Kicker{Client: lambda.NewFromConfig(fakeAWS(srv.URL))}).Kick(context.Background()); err == nil {
		t.Fatal("a kicker without a function should refuse")
	}
}

func TestIAMAuthPutsATokenInThePassword(t *testing.T) {
	t.Parallel()
	before := gbaws.IAMAuth("eu-west-1", credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""))
	cc, err := pgx.ParseConfig("postgres://gb_app@db.abc.eu-west-1.rds.amazonaws.com:5432/gb?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	if err := before(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse("https://" + cc.Password)
	if err != nil {
		t.Fatalf("token %q: %v", cc.Password, err)
	}
	q := u.Query()
	if u.Host != "db.abc.eu-west-1.rds.amazonaws.com:5432" || q.Get("Action") != "connect" || q.Get("DBUser") != "gb_app" ||
		q.Get("X-Amz-Signature") == "" || !strings.Contains(q.Get("X-Amz-Credential"), "/eu-west-1/rds-db/") {
		t.Fatalf("not an RDS auth token: %q", cc.Password)
	}
	cc.User = ""
	if err := before(context.Background(), cc); err == nil {
		t.Fatal("IAM auth without a user should fail")
	}
}

func TestSetupOpensThePoolWithSecretsAndName(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewURL(t)
	srv := lambdatest.NewLambdaAPI(t)
	sm := &fakeSecrets{values: map[string]string{
		"arn:db":     `{"username":"gb","password":"unused-by-trust-auth"}`,
		"arn:openai": `{"api_key":"sk-test"}`,
	}}
	env := map[string]string{
		config.EnvDatabaseURL:       dbURL,
		config.EnvDatabaseSecretARN: "arn:db",
		config.EnvDatabaseProxy:     "true",
		config.EnvOpenAISecretARN:   "arn:openai",
		config.EnvModel:             "gpt-test",
		config.EnvWorkerFunction:    "gb-worker",
	}
	setup := func(modelKey bool) *gbaws.Runtime {
		t.Helper()
		rt, err := gbaws.Setup(context.Background(), gbaws.SetupParams{
			Getenv:   func(k string) string { return env[k] },
			AppName:  "gb-test",
			MaxConns: 2,
			ModelKey: modelKey,
			LoadAWS:  func(context.Context) (awssdk.Config, error) { return fakeAWS(srv.URL), nil },
			Secrets:  sm,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		return rt
	}

	// A function that only inserts researches: no model key is read.
	rt := setup(false)
	if sm.read[len(sm.read)-1] != "arn:db" || len(sm.read) != 1 {
		t.Fatalf("secrets read: %v", sm.read)
	}
	var app string
	if err := rt.Pool.QueryRow(context.Background(), "SELECT current_setting('application_name')").Scan(&app); err != nil {
		t.Fatal(err)
	}
	if app != "gb-test" {
		t.Fatalf("application_name %q", app)
	}
	if rt.Pool.Config().ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeExec {
		t.Fatal("DATABASE_PROXY=true should select the exec query mode")
	}
	if rt.Config.OpenAIKey != "" || rt.RecordingModel().Name() != "gpt-test" {
		t.Fatalf("key %q model %q", rt.Config.OpenAIKey, rt.RecordingModel().Name())
	}
	if _, err := rt.RecordingModel().Complete(context.Background(), llm.Request{}); !errors.Is(err, gbaws.ErrNoModelHere) {
		t.Fatalf("recording model completed: %v", err)
	}
	// It knows the model's profile, so that the budgets a research asks
	// for are checked against its price (gpt-test has none).
	if p, ok := rt.RecordingModel().(llm.Profiler); !ok || p.Profile().Priced || p.Profile().ContextWindow == 0 {
		t.Fatalf("recording model %T: profiler %t", rt.RecordingModel(), ok)
	}
	if err := rt.Kick()(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls := srv.Calls(); len(calls) != 1 || calls[0].InvocationType != "Event" {
		t.Fatalf("kick: %+v", calls)
	}

	// The worker reads the model key too.
	rt = setup(true)
	if rt.Config.OpenAIKey != "sk-test" {
		t.Fatalf("model key %q", rt.Config.OpenAIKey)
	}
	m, err := rt.Model()
	if err != nil || m.Name() != "gpt-test" {
		t.Fatalf("model %v, %v", m, err)
	}
}

func TestSetupSizesTheWorkersPoolWithGBDBPool(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewURL(t)
	for _, tc := range []struct {
		pool    string
		working bool
		want    int32
	}{
		{"", true, config.DBPoolDefault},
		{"7", true, 7},
		{"7", false, 2}, // the API, the scheduler and migrate keep MaxConns
	} {
		env := map[string]string{config.EnvDatabaseURL: dbURL, config.EnvDBPool: tc.pool}
		rt, err := gbaws.Setup(context.Background(), gbaws.SetupParams{
			Getenv: func(k string) string { return env[k] }, MaxConns: 2, Working: tc.working})
		if err != nil {
			t.Fatal(err)
		}
		got := rt.Pool.Config().MaxConns
		rt.Close()
		if got != tc.want {
			t.Errorf("GB_DB_POOL %q, working %v: pool of %d, want %d", tc.pool, tc.working, got, tc.want)
		}
	}
	env := map[string]string{config.EnvDatabaseURL: dbURL, config.EnvDBPool: "1"}
	_, err := gbaws.Setup(context.Background(), gbaws.SetupParams{Getenv: func(k string) string { return env[k] }, Working: true})
	if err == nil || !strings.Contains(err.Error(), config.EnvDBPool+": 1 is out of range") {
		t.Fatalf("GB_DB_POOL=1: %v", err)
	}
}

func TestModelName(t *testing.T) {
	t.Parallel()
	if got := gbaws.ModelName(config.Config{Model: "gpt-x"}); got != offline.Name {
		t.Fatalf("no key: %q", got)
	}
	if got := gbaws.ModelName(config.Config{OpenAIKey: "k"}); got == offline.Name || got == "" {
		t.Fatalf("key, no model: %q", got)
	}
}
