package config

import (
	"strings"
	"testing"
)

// GB_CITATIONS is off, flag or revise, passed to the agent; unset leaves
// the agent's default; anything else is an error naming it.
func TestCitationsSetting(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"", "off", "flag", "revise"} {
		c, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvCitations: mode}))
		if err != nil || c.Agent().Citations != mode {
			t.Errorf("GB_CITATIONS=%q: %v, agent's %q", mode, err, c.Agent().Citations)
		}
	}
	_, err := FromEnv(env(map[string]string{EnvDatabaseURL: "postgres://x", EnvCitations: "sometimes"}))
	if err == nil || !strings.Contains(err.Error(), EnvCitations+":") || !strings.Contains(err.Error(), "off, flag or revise") {
		t.Errorf("GB_CITATIONS=sometimes: %v", err)
	}
}
