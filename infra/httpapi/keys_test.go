package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// listKeys answers the caller's keys, failing the test unless it is a 200.
func (b *testBundle) listKeys(t *testing.T, key string) []map[string]any {
	t.Helper()
	code, body := b.call(t, key, "GET", "/v1/gb/keys", "")
	items, ok := body["keys"].([]any)
	if code != http.StatusOK || !ok {
		t.Fatalf("GET /v1/gb/keys: %d %v", code, body)
	}
	var out []map[string]any
	for _, it := range items {
		out = append(out, it.(map[string]any))
	}
	return out
}

// newKey creates a key for the caller of key with body, failing the test
// unless it is a 201; it returns the new key and its id.
func (b *testBundle) newKey(t *testing.T, key, body string) (string, string) {
	t.Helper()
	code, got := b.call(t, key, "POST", "/v1/gb/keys", body)
	k, _ := got["key"].(string)
	if code != http.StatusCreated || !strings.HasPrefix(k, "gb_") {
		t.Fatalf("POST /v1/gb/keys %s: %d %v", body, code, got)
	}
	return k, fmt.Sprint(got["id"])
}

// refusal checks that a request with key answers 401 with a message that
// has want and does not show the key.
func (b *testBundle) refusal(t *testing.T, key, want string) {
	t.Helper()
	resp, data := b.raw(t, "GET", "/v1/gb/research", http.Header{"Authorization": {"Bearer " + key}}, "")
	code, msg := jsonError(t, resp, data)
	if resp.StatusCode != http.StatusUnauthorized || code != "unauthorized" || !strings.Contains(msg, want) {
		t.Errorf("got %d %s, want 401 saying %q", resp.StatusCode, data, want)
	}
	if strings.Contains(string(data), key[3:]) {
		t.Errorf("the 401 shows the key: %s", data)
	}
}

func TestKeyCreatedListedAndUsable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, data := b.raw(t, "POST", "/v1/gb/keys", http.Header{"Authorization": {"Bearer " + b.alice}},
		`{"name":"laptop","expires_in_days":30}`)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d Cache-Control %q %s", resp.StatusCode, resp.Header.Get("Cache-Control"), data)
	}
	key, id := b.newKey(t, b.alice, "")
	keys := b.listKeys(t, key)
	if len(keys) != 3 || fmt.Sprint(keys[0]["id"]) != id || keys[0]["name"] != "" || keys[0]["expires_at"] != nil ||
		keys[1]["name"] != "laptop" || keys[1]["expires_at"] == nil || keys[2]["status"] != "active" {
		t.Fatalf("list with the new key: %v, want the two new keys, newest first, then the first", keys)
	}
	if !strings.HasPrefix(key, fmt.Sprint(keys[0]["prefix"])) {
		t.Errorf("the prefix %v does not start the key", keys[0]["prefix"])
	}
	for _, k := range keys {
		if _, ok := k["key"]; ok {
			t.Errorf("the list shows a key: %v", k)
		}
		if _, ok := k["hash"]; ok {
			t.Errorf("the list shows a hash: %v", k)
		}
	}
}

func TestRevokedKeyIsRefusedOnTheNextRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, id := b.newKey(t, b.alice, `{"name":"leaked"}`)
	if code, _ := b.call(t, key, "GET", "/v1/gb/research", ""); code != http.StatusOK {
		t.Fatalf("the new key: %d", code)
	}
	code, got := b.call(t, b.alice, "DELETE", "/v1/gb/keys/"+id, "")
	if code != http.StatusOK || got["status"] != "revoked" || got["revoked_at"] == nil {
		t.Fatalf("revoke: %d %v", code, got)
	}
	b.refusal(t, key, "revoked")
	if code, _ := b.call(t, b.alice, "GET", "/v1/gb/research", ""); code != http.StatusOK {
		t.Errorf("alice's other key after the revocation: %d", code)
	}
	// A key may revoke itself: the request is served, the next refused.
	self, selfID := b.newKey(t, b.alice, "")
	if code, got := b.call(t, self, "DELETE", "/v1/gb/keys/"+selfID, ""); code != http.StatusOK {
		t.Fatalf("a key revoking itself: %d %v", code, got)
	}
	b.refusal(t, self, "revoked")
}

func TestExpiredKeyIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, id := b.newKey(t, b.alice, `{"expires_in_days":1}`)
	if code, _ := b.call(t, key, "GET", "/v1/gb/keys", ""); code != http.StatusOK {
		t.Fatalf("before its expiry: %d", code)
	}
	if _, err := b.agent.Pool().Exec(context.Background(),
		"UPDATE gb_api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	b.refusal(t, key, "expired")
	if keys := b.listKeys(t, b.alice); keys[0]["status"] != "expired" {
		t.Errorf("list: %v, want the key expired", keys[0])
	}
}

func TestKeysOfAnotherUserAnswer404(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, id := b.newKey(t, b.alice, `{"name":"alice's"}`)
	for _, k := range b.listKeys(t, b.bob) {
		if fmt.Sprint(k["id"]) == id || k["name"] == "alice's" {
			t.Errorf("bob's list has alice's key: %v", k)
		}
	}
	for _, path := range []string{"/v1/gb/keys/" + id, "/v1/gb/keys/0", "/v1/gb/keys/abc", "/v1/gb/keys/99999999999999999999"} {
		resp, data := b.raw(t, "DELETE", path, http.Header{"Authorization": {"Bearer " + b.bob}}, "")
		if code, _ := jsonError(t, resp, data); resp.StatusCode != http.StatusNotFound || code != "not_found" {
			t.Errorf("bob DELETE %s: %d %s, want 404", path, resp.StatusCode, data)
		}
	}
	if keys := b.listKeys(t, b.alice); keys[0]["status"] != "active" {
		t.Errorf("alice's key after bob's attempt: %v", keys[0])
	}
}

func TestKeyLastUsedAtMoves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, id := b.newKey(t, b.alice, "")
	if keys := b.listKeys(t, b.alice); keys[0]["last_used_at"] != nil {
		t.Fatalf("an unused key: %v", keys[0])
	}
	b.listKeys(t, key)
	first := b.listKeys(t, b.alice)[0]["last_used_at"]
	if first == nil {
		t.Fatal("last_used_at is not set by a request")
	}
	if _, err := b.agent.Pool().Exec(context.Background(),
		"UPDATE gb_api_keys SET last_used_at = last_used_at - interval '2 minutes' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	back := b.listKeys(t, b.alice)[0]["last_used_at"]
	b.listKeys(t, key)
	if now := b.listKeys(t, b.alice)[0]["last_used_at"]; now == back || now == nil {
		t.Errorf("last_used_at stayed at %v after a request", back)
	}
}

func TestBadKeyRequestsAreRefusedWithTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ body, field string }{
		{`{"name":1}`, "name"},
		{`{"name":"a\u0000b"}`, "name"},
		{`{"name":"` + strings.Repeat("é", 65) + `"}`, "name"},
		{`{"expires_in_days":0}`, "expires_in_days"},
		{`{"expires_in_days":-1}`, "expires_in_days"},
		{`{"expires_in_days":3651}`, "expires_in_days"},
		{`{"expires_in_days":"ten"}`, "expires_in_days"},
		{`{"expires_in_days":1.5}`, "expires_in_days"},
		{`{"Name":"x"}`, "Name"},
		{`{"name":"x"} {}`, ""},
		{`[]`, ""},
	} {
		code, body := b.call(t, b.alice, "POST", "/v1/gb/keys", c.body)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil || fmt.Sprint(e["field"]) != c.field && c.field != "" {
			t.Errorf("%.60s: got %d %v, want 400 naming %q", c.body, code, body, c.field)
		}
	}
	if keys := b.listKeys(t, b.alice); len(keys) != 1 {
		t.Errorf("refused requests made keys: %v", keys)
	}
	_, _ = b.newKey(t, b.alice, `{"name":null,"expires_in_days":null}`)
}

func TestKeyRoutesNeedAKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ method, path string }{{"GET", "/v1/gb/keys"}, {"POST", "/v1/gb/keys"}, {"DELETE", "/v1/gb/keys/1"}} {
		resp, data := b.raw(t, c.method, c.path, nil, "")
		if code, _ := jsonError(t, resp, data); resp.StatusCode != http.StatusUnauthorized || code != "unauthorized" {
			t.Errorf("%s %s without a key: %d %s", c.method, c.path, resp.StatusCode, data)
		}
	}
}
