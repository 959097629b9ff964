package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestGuardRefusesHostileTargets fetches hostile URLs through a Fetcher
// whose resolver is a stub and whose dialer fails the test if it is ever
// asked for a refused address. Each must be refused with its reason.
func TestGuardRefusesHostileTargets(t *testing.T) {
	resolver := stubResolver{
		"internal.example": {addr("10.1.2.3")},
		"metadata.example": {addr("169.254.169.254")},
		"rebind.example":   {addr("10.0.0.1"), addr("127.0.0.1")},
		"v6local.example":  {addr("::1")},
		"mapped.example":   {addr("::ffff:192.168.0.10")},
	}
	cases := []struct {
		name, url, reason string
	}{
		{"loopback", "http://127.0.0.1/", "loopback"},
		{"loopback other", "http://127.0.0.2:80/", "loopback"},
		{"private 10/8", "http://10.0.0.5/", "private address (RFC 1918)"},
		{"private 172.16/12", "http://172.16.3.4/", "private address (RFC 1918)"},
		{"private 192.168/16", "https://192.168.1.1/", "private address (RFC 1918)"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"link-local", "http://169.254.10.1/", "link-local"},
		{"cgnat", "http://100.64.0.1/", "carrier-grade NAT"},
		{"unspecified v4", "http://0.0.0.0/", "unspecified"},
		{"this network", "http://0.1.2.3/", "this network"},
		{"broadcast", "http://255.255.255.255/", "broadcast"},
		{"multicast v4", "http://224.0.0.1/", "multicast"},
		{"reserved 240/4", "http://240.0.0.1/", "reserved"},
		{"documentation", "http://192.0.2.1/", "documentation"},
		{"loopback v6", "http://[::1]/", "loopback"},
		{"unspecified v6", "http://[::]/", "unspecified"},
		{"mapped loopback", "http://[::ffff:127.0.0.1]/", "IPv4-mapped IPv6 form of 127.0.0.1, a loopback"},
		{"mapped metadata", "http://[::ffff:169.254.169.254]/", "IPv4-mapped IPv6 form of 169.254.169.254, the cloud metadata"},
		{"mapped hex", "http://[::ffff:a9fe:a9fe]/", "cloud metadata"},
		{"unique-local", "http://[fd00::1]/", "unique-local"},
		{"link-local v6 zone", "http://[fe80::1%25eth0]/", "link-local"},
		{"multicast v6", "http://[ff02::1]/", "multicast"},
		{"nat64 of metadata", "http://[64:ff9b::a9fe:a9fe]/", "NAT64"},
		{"6to4 of loopback", "http://[2002:7f00:1::]/", "6to4"},
		{"ipv4-compatible", "http://[::127.0.0.1]/", "IPv4-compatible"},
		{"name to private", "http://internal.example/", "internal.example resolves to 10.1.2.3, which is a private address"},
		{"name to metadata", "http://metadata.example/", "metadata.example resolves to 169.254.169.254, which is the cloud metadata"},
		{"name to loopback v6", "http://v6local.example/", "loopback"},
		{"name to mapped private", "http://mapped.example/", "IPv4-mapped IPv6 form of 192.168.0.10"},
		{"every answer refused", "http://rebind.example/", "every address of rebind.example is refused"},
		{"odd port", "http://93.184.215.14:22/", "port 22 is not allowed"},
		{"odd https port", "https://93.184.215.14:8443/", "port 8443 is not allowed"},
		{"ftp", "ftp://example.com/file", `scheme "ftp"`},
		{"file", "file:///etc/passwd", `scheme "file"`},
		{"gopher", "gopher://127.0.0.1:70/", `scheme "gopher"`},
		{"javascript", "javascript:alert(1)", `scheme "javascript"`},
		{"credentials", "http://user:secret@example.com/", "credentials"},
		{"userinfo trick", "http://example.com@127.0.0.1/", "credentials"},
		{"decimal ip", "http://2130706433/", "non-standard form"},
		{"octal ip", "http://0177.0.0.1/", "non-standard form"},
		{"hex ip", "http://0x7f.0.0.1/", "non-standard form"},
		{"short ip", "http://127.1/", "non-standard form"},
		{"no host", "http:///path", "no host"},
	}
	d := newDialer(t)
	f := New(Config{Resolver: resolver, Dial: d.Dial})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), c.url)
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("Fetch(%s) = %v, want a refusal", c.url, err)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Errorf("Fetch(%s) refused with %q, want the reason %q", c.url, err, c.reason)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the refusal repeats the URL's password: %q", err)
			}
		})
	}
	if got := d.addresses(); len(got) != 0 {
		t.Errorf("the dialer was asked for %v; no hostile case may reach it", got)
	}
}

// TestGuardAllowsPublicAndAllowListed: a public name on port 80 reaches
// the dialer (served over a pipe: no packet leaves the machine), and a
// loopback server is reached only through the allow-list, on its port.
func TestGuardAllowsPublicAndAllowListed(t *testing.T) {
	d := newDialer(t)
	d.piped["93.184.215.14:80"] = pipeText("text/plain; charset=utf-8", "hello from a public host")
	_, port := d.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		fmt.Fprint(w, "# Local\n\nserved on loopback")
	}))
	resolver := stubResolver{"public.example": {addr("93.184.215.14")}, "docs.example": {addr("127.0.0.1")}}
	allow := []Rule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: port, Top: port}}
	f := New(Config{Resolver: resolver, Dial: d.Dial, Allow: allow, Logger: quietLogger()})

	page, err := f.Fetch(context.Background(), "http://public.example/")
	if err != nil || page.Text != "hello from a public host" || page.Status != 200 {
		t.Fatalf("public fetch = %+v, %v", page, err)
	}
	page, err = f.Fetch(context.Background(), fmt.Sprintf("http://docs.example:%d/readme.md", port))
	if err != nil || !strings.Contains(page.Text, "served on loopback") || page.ContentType != "text/markdown" {
		t.Fatalf("allow-listed fetch = %+v, %v", page, err)
	}
	// The same server on another loopback address is not allow-listed.
	if _, err := f.Fetch(context.Background(), fmt.Sprintf("http://127.0.0.2:%d/", port)); !errors.Is(err, ErrRefused) {
		t.Errorf("127.0.0.2 outside the allow-list: err = %v, want a refusal", err)
	}
	want := []string{"93.184.215.14:80", fmt.Sprintf("127.0.0.1:%d", port)}
	if got := d.addresses(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the dialer was asked for %v, want %v", got, want)
	}
}

// TestGuardRedirects: every hop of a redirect chain is checked where it
// connects, so a chain ending on loopback, on the metadata address or on
// another scheme is refused, and so is a sixth redirect.
func TestGuardRedirects(t *testing.T) {
	d := newDialer(t)
	// A second loopback server, NOT in the allow-list: reaching it would be
	// a loopback fetch.
	_, hiddenPort := d.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the hidden loopback server was reached: %s", r.URL)
	}))
	d.mu.Lock()
	delete(d.local, fmt.Sprintf("127.0.0.1:%d", hiddenPort)) // the dialer must not be asked for it either
	d.mu.Unlock()
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/hop1", http.StatusFound) })
	mux.HandleFunc("/hop1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hop2", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/hop2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/secret", hiddenPort), http.StatusFound)
	})
	mux.HandleFunc("/meta", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/mapped", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://[::ffff:127.0.0.1]/", http.StatusFound)
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/loop/", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path+"x", http.StatusFound) })
	mux.HandleFunc("/five/", func(w http.ResponseWriter, r *http.Request) {
		if strings.Count(r.URL.Path, "x") < MaxRedirects {
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
			return
		}
		fmt.Fprint(w, "arrived")
	})
	_, port := d.serve(t, mux)
	resolver := stubResolver{"docs.example": {addr("127.0.0.1")}, "localhost": {addr("127.0.0.1")}}
	allow := []Rule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Low: port, Top: port}}
	f := New(Config{Resolver: resolver, Dial: d.Dial, Allow: allow, Logger: quietLogger()})
	base := fmt.Sprintf("http://docs.example:%d", port)

	for path, reason := range map[string]string{
		"/start":  "localhost resolves to 127.0.0.1, which is a loopback address",
		"/meta":   "cloud metadata",
		"/mapped": "IPv4-mapped",
		"/file":   `scheme "file"`,
		"/loop/":  "more than 5 redirects",
	} {
		_, err := f.Fetch(context.Background(), base+path)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: err = %v, want a refusal saying %q", path, err, reason)
		}
	}
	page, err := f.Fetch(context.Background(), base+"/five/")
	if err != nil || page.Text != "arrived" || !strings.HasSuffix(page.URL, "/five/xxxxx") {
		t.Errorf("five redirects: page %+v, err %v; want the final page and URL", page, err)
	}
	for _, a := range d.addresses() {
		if a != fmt.Sprintf("127.0.0.1:%d", port) {
			t.Errorf("the dialer was asked for %s", a)
		}
	}
}

// TestDefaultDialerControl: the default dialer checks the socket's
// address again, whatever resolved it.
func TestDefaultDialerControl(t *testing.T) {
	p := policy{ports: []uint16{80, 443}}
	for _, a := range []string{"127.0.0.1:80", "[::ffff:10.0.0.1]:443", "169.254.169.254:80", "93.184.215.14:25"} {
		if err := p.control("tcp", a, nil); !errors.Is(err, ErrRefused) {
			t.Errorf("control(%s) = %v, want a refusal", a, err)
		}
	}
	if err := p.control("tcp", "93.184.215.14:443", nil); err != nil {
		t.Errorf("control(public:443) = %v, want nil", err)
	}
	// Through a real dialer, to a loopback listener this test started: the
	// hook refuses before the connection is made.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialer := net.Dialer{Control: p.control}
	if conn, err := dialer.Dial("tcp", ln.Addr().String()); !errors.Is(err, ErrRefused) {
		if conn != nil {
			conn.Close()
		}
		t.Errorf("dial loopback through the hook: %v, want a refusal", err)
	}
}

func TestParseAllow(t *testing.T) {
	rules, err := ParseAllow(" 127.0.0.1/32:18000-18999, [::1]/128:8080 ,10.0.0.0/8:443")
	if err != nil || len(rules) != 3 {
		t.Fatalf("ParseAllow = %v, %v", rules, err)
	}
	if !rules[0].Matches(addr("127.0.0.1"), 18500) || rules[0].Matches(addr("127.0.0.1"), 19000) ||
		!rules[0].Matches(addr("::ffff:127.0.0.1"), 18000) || !rules[1].Matches(addr("::1"), 8080) ||
		!rules[2].Matches(addr("10.9.9.9"), 443) || rules[2].Matches(addr("11.0.0.1"), 443) {
		t.Errorf("rules match wrongly: %v", rules)
	}
	for _, bad := range []string{"127.0.0.1:80", "127.0.0.1/33:80", "127.0.0.1/32:0", "127.0.0.1/32:90-80", "127.0.0.1/32:http"} {
		if _, err := ParseAllow(bad); err == nil || !strings.Contains(err.Error(), EnvAllow) {
			t.Errorf("ParseAllow(%q) = %v, want an error naming %s", bad, err, EnvAllow)
		}
	}
	if _, err := FromEnv(func(k string) string { return map[string]string{EnvPorts: "80,x"}[k] }, quietLogger()); err == nil ||
		!strings.Contains(err.Error(), EnvPorts) {
		t.Errorf("FromEnv with a bad port list = %v, want an error naming %s", err, EnvPorts)
	}
}

// TestAllowListWarns: an allow-list is logged as a warning; none is
// logged without one.
func TestAllowListWarns(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if _, err := FromEnv(func(k string) string { return map[string]string{EnvAllow: "127.0.0.1/32:18000-18999"}[k] }, log); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "127.0.0.1/32:18000-18999") ||
		!strings.Contains(out, EnvAllow) {
		t.Errorf("log %q, want a warning naming the allow-list", out)
	}
	buf.Reset()
	if _, err := FromEnv(func(string) string { return "" }, log); err != nil || buf.Len() != 0 {
		t.Errorf("no allow-list: err %v, log %q", err, buf.String())
	}
}
