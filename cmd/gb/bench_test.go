package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gbresearch/gb/infra/config"
)

// TestBenchUsageErrors checks that gb bench refuses sizes it cannot run
// before it connects, with exit 2 and one line that names the option.
func TestBenchUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"bench", "--steps", "1"}, nil, "steps must be 2 to 40"},
		{[]string{"bench", "--runs", "0"}, nil, "runs must be at least 1"},
		{[]string{"bench", "--trees", "-1"}, nil, "must not be negative"},
		{[]string{"bench", "--pool", "1"}, nil, "--pool at least 2"},
		{[]string{"bench"}, map[string]string{config.EnvMaxWorkers: "many"}, `GB_MAX_WORKERS: "many" is not a whole number`},
		{[]string{"bench", "extra"}, nil, "takes no arguments"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		err := runWith(context.Background(), c.args, &out, &errOut)
		if code := exitCode(err, false); code != exitUsage || err == nil ||
			!strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, error %v; want exit 2 and one line with %q", c.args, code, err, c.want)
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
}
