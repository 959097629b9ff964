package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// gbKeys runs the built gb with the stack's API, key and database: both
// ways to the keys are open, and the test says which it takes.
func (s *cliStack) gbKeys(t *testing.T, key string, a ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, a...)
	cmd.Env = append(os.Environ(), "GB_API_URL="+s.url, "GB_API_KEY="+key, "DATABASE_URL="+s.pool.Config().ConnString())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running gb %v: %v", a, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// keysJSON runs a gb keys list … -o json that must succeed, and returns
// its keys.
func (s *cliStack) keysJSON(t *testing.T, key string, a ...string) []map[string]any {
	t.Helper()
	code, out, errOut := s.gbKeys(t, key, append([]string{"keys", "list", "-o", "json"}, a...)...)
	var v struct{ Keys []map[string]any }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("keys list %v: exit %d\n%s\n%s", a, code, out, errOut)
	}
	return v.Keys
}

// TestCLIKeysOverTheAPI manages the caller's own keys through the API: a
// key created, listed (JSON and table), used, revoked and then refused;
// another user's key is not found.
func TestCLIKeysOverTheAPI(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	code, out, errOut := s.gbKeys(t, s.key, "keys", "create", "--name", "ci runner", "--expires-in-days", "7")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "gb_") || strings.Contains(key, "\n") || !strings.Contains(errOut, "shown once") {
		t.Fatalf("create: exit %d\n%s\n%s", code, out, errOut)
	}
	keys := s.keysJSON(t, key)
	if len(keys) != 2 || keys[0]["name"] != "ci runner" || keys[0]["expires_at"] == nil {
		t.Fatalf("list -o json: %v, want the new key first", keys)
	}
	for _, k := range keys {
		hasFields(t, "keys list item", k, "id", "prefix", "name", "status", "created_at", "last_used_at", "expires_at", "revoked_at")
		if _, ok := k["key"]; ok {
			t.Errorf("the list shows a key: %v", k)
		}
	}
	newID := fmt.Sprint(keys[0]["id"])
	code, out, errOut = s.gbKeys(t, s.key, "keys", "list")
	if code != 0 || !strings.Contains(out, "PREFIX") || !strings.Contains(out, "ci runner") ||
		!strings.Contains(out, jobs.ShownPrefix(s.key)+" *") {
		t.Errorf("list table: exit %d, no header, new key or marked key in use:\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = s.gbKeys(t, s.key, "keys", "revoke", newID)
	if code != 0 || !strings.Contains(out, "revoked key "+newID) || strings.Contains(errOut, "no longer works") {
		t.Fatalf("revoke: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = s.gbKeys(t, key, "research", "list")
	if code != exitAuth || !strings.Contains(errOut, "revoked") || strings.Contains(errOut, key[3:]) {
		t.Errorf("the revoked key: exit %d (want %d), stderr %q: want it refused as revoked, without the key", code, exitAuth, errOut)
	}
	// Another user's key, made on the database, is not the caller's.
	other, err := jobs.CreateUserKey(context.Background(), s.pool, "other", jobs.KeyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = s.gbKeys(t, s.key, "keys", "revoke", fmt.Sprint(other.ID))
	if code != exitError || !strings.Contains(errOut, "HTTP 404") {
		t.Errorf("revoke another user's key: exit %d, stderr %q, want 1 and a 404", code, errOut)
	}
	// A key may revoke itself, and says so.
	self := s.keysJSON(t, s.key)[1]
	code, _, errOut = s.gbKeys(t, s.key, "keys", "revoke", fmt.Sprint(self["id"]))
	if code != 0 || !strings.Contains(errOut, "no longer works") {
		t.Errorf("revoke the key in use: exit %d, stderr %q", code, errOut)
	}
}

// TestCLIKeysOnTheDatabase is the operator's way: any user's keys by
// --user NAME on DATABASE_URL, no API key needed.
func TestCLIKeysOnTheDatabase(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 0)
	code, out, errOut := s.gbKeys(t, "", "keys", "create", "--user", "bob", "--name", "ops", "-o", "json")
	var made jobs.NewKey
	if code != 0 || json.Unmarshal([]byte(out), &made) != nil || !strings.HasPrefix(made.Key, "gb_") || made.Name != "ops" {
		t.Fatalf("create --user bob -o json: exit %d\n%s\n%s", code, out, errOut)
	}
	if keys := s.keysJSON(t, "", "--user", "bob"); len(keys) != 1 || keys[0]["id"] != float64(made.ID) {
		t.Fatalf("list --user bob: %v", keys)
	}
	if code, out, errOut := s.gbKeys(t, made.Key, "keys", "list"); code != 0 || !strings.Contains(out, "ops") {
		t.Fatalf("bob's key over the API: exit %d\n%s\n%s", code, out, errOut)
	}
	id := fmt.Sprint(made.ID)
	if code, _, errOut := s.gbKeys(t, "", "keys", "revoke", id, "--user", "cli"); code != exitError || !strings.Contains(errOut, "no API key with id "+id) {
		t.Errorf("revoke bob's key as cli's: exit %d, stderr %q", code, errOut)
	}
	if code, out, errOut := s.gbKeys(t, "", "keys", "revoke", id, "--user", "bob"); code != 0 || !strings.Contains(out, "revoked key "+id) {
		t.Fatalf("revoke --user bob: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := s.gbKeys(t, made.Key, "keys", "list"); code != exitAuth || !strings.Contains(errOut, "revoked") {
		t.Errorf("bob's revoked key: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := s.gbKeys(t, "", "keys", "list", "--user", "nobody"); code != exitError || !strings.Contains(errOut, `no user named "nobody"`) {
		t.Errorf("list --user nobody: exit %d, stderr %q", code, errOut)
	}
	// The operator's first command, as it always was: the key alone on stdout.
	code, out, errOut = s.gbKeys(t, "", "keys", "create", "--user", "carol")
	if code != 0 || !strings.HasPrefix(out, "gb_") || strings.Count(out, "\n") != 1 || !strings.Contains(errOut, "for carol") {
		t.Errorf("create --user carol: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestCLIKeysUsageErrors checks the command lines gb keys cannot run: exit
// 2 before any request.
func TestCLIKeysUsageErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "revoke"}, "takes one key ID"},
		{[]string{"keys", "revoke", "abc"}, `"abc" is not a key id`},
		{[]string{"keys", "revoke", "0"}, `"0" is not a key id`},
		{[]string{"keys", "create", "--expires-in-days", "-1"}, "--expires-in-days must be"},
		{[]string{"keys", "create", "--expires-in-days", "99999"}, "--expires-in-days must be"},
		{[]string{"keys", "create", "extra"}, "takes no arguments"},
		{[]string{"keys", "list", "--user", ""}, "--user needs a user name"},
		{[]string{"keys", "list", "-o", "yaml"}, "not an output format"},
		{[]string{"keys", "frobnicate"}, "use one of list, create, revoke"},
	} {
		var out, errOut bytes.Buffer
		err := runWith(context.Background(), c.args, &out, &errOut)
		if code := exitCode(err, false); code != exitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, error %v; want exit 2 with %q", c.args, code, err, c.want)
		}
	}
}
