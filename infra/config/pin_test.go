package config

import (
	"strings"
	"testing"

	"github.com/gbresearch/gb/jobs"
)

// GB_PIN is run or latest, passed to the agent; unset leaves run (the
// agent's default); anything else is an error naming it and the modes.
func TestPinSetting(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", jobs.PinRun, jobs.PinLatest} {
		c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvPin: mode}))
		if err != nil || c.Agent().Pin != mode {
			t.Errorf("GB_PIN=%q: %v, agent's %q", mode, err, c.Agent().Pin)
		}
	}
	_, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvPin: "newest"}))
	if err == nil || !strings.Contains(err.Error(), EnvPin+":") || !strings.Contains(err.Error(), `"newest" must be run or latest`) {
		t.Errorf("GB_PIN=newest: %v", err)
	}
}
