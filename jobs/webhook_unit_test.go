package jobs_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gbresearch/gb/jobs"
)

// TestWebhookSignatureMatchesTheStandardVector signs the test vector the
// Standard Webhooks libraries share.
func TestWebhookSignatureMatchesTheStandardVector(t *testing.T) {
	t.Parallel()
	sig, err := jobs.SignWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; err != nil || sig != want {
		t.Fatalf("signature %q %v, want %q", sig, err, want)
	}
	if _, err := jobs.SignWebhook("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "m", 1, nil); err == nil {
		t.Error("a secret without whsec_ was used")
	}
}

// TestWebhookRetriesSpanADay checks the schedule: each delay doubles up to
// its cap, and the last of WebhookMaxAttempts comes a day after the first
// (the sum of the delays between them crosses 24 h at the last one).
func TestWebhookRetriesSpanADay(t *testing.T) {
	t.Parallel()
	base := jobs.WebhookRetryBaseDefault
	var total time.Duration
	for n := 1; n < jobs.WebhookMaxAttempts; n++ {
		d := jobs.WebhookDelayForTest(base, n)
		if prev := jobs.WebhookDelayForTest(base, n-1); n > 1 && d != min(2*prev, 4*time.Hour) {
			t.Errorf("delay after attempt %d is %s, after %d %s: want double, capped at 4h", n, d, n-1, prev)
		}
		if n == jobs.WebhookMaxAttempts-1 && total >= 24*time.Hour {
			t.Errorf("the attempt before the last already comes %s after the first: fewer attempts span a day", total)
		}
		total += d
	}
	if total < 24*time.Hour || total > 27*time.Hour {
		t.Errorf("the last attempt comes %s after the first, want a day or a little more", total)
	}
	if d := jobs.WebhookDelayForTest(time.Millisecond, 100); d != 1440*time.Millisecond {
		t.Errorf("a late delay with a 1ms base is %s, want the 1.44s cap", d)
	}
}

// TestWebhookAttemptOutcomes checks what each answer makes of a delivery.
func TestWebhookAttemptOutcomes(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("%w: 10.0.0.1 is private", jobs.ErrWebhookRefused)
	for _, c := range []struct {
		code int
		err  error
		last bool
		want string
	}{
		{200, nil, false, jobs.DeliveryDelivered},
		{204, nil, true, jobs.DeliveryDelivered},
		{301, nil, false, jobs.DeliveryRefused},
		{400, nil, false, jobs.DeliveryRefused},
		{401, nil, false, jobs.DeliveryRefused},
		{404, nil, false, jobs.DeliveryRefused},
		{410, nil, false, jobs.DeliveryRefused},
		{408, nil, false, jobs.AttemptRetrying},
		{409, nil, false, jobs.AttemptRetrying},
		{429, nil, false, jobs.AttemptRetrying},
		{500, nil, false, jobs.AttemptRetrying},
		{503, nil, false, jobs.AttemptRetrying},
		{503, nil, true, jobs.DeliveryFailed},
		{0, errors.New("connection refused"), false, jobs.AttemptRetrying},
		{0, errors.New("connection refused"), true, jobs.DeliveryFailed},
		{0, refused, false, jobs.DeliveryRefused},
	} {
		if got := jobs.ClassifyAttemptForTest(c.code, c.err, c.last); got != c.want {
			t.Errorf("%d %s %v (last %v): %s, want %s", c.code, http.StatusText(c.code), c.err, c.last, got, c.want)
		}
	}
}

// TestWebhookURLForm checks the form of a webhook URL; the guard's checks
// come after it.
func TestWebhookURLForm(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, want string }{
		{"", ""},
		{"https://hooks.example.com/gb?token=x", ""},
		{"http://hooks.example.com:8080/gb", ""},
		{"ftp://hooks.example.com/gb", "https (or http)"},
		{"hooks.example.com/gb", "https (or http)"},
		{"https://user:pw@hooks.example.com/gb", "credentials"},
		{"https:///gb", "no host"},
		{" https://hooks.example.com/gb", "white space"},
		{"https://hooks.example.com/" + strings.Repeat("a", jobs.MaxWebhookURLLen), "at most"},
		{"https://hooks.example.com/\x7f", "not a URL"},
	} {
		err := jobs.ValidateWebhookURL("webhook_url", c.url)
		var fe *jobs.FieldError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want valid", c.url, err)
		case c.want != "" && (!errors.As(err, &fe) || fe.Field != "webhook_url" || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want a webhook_url error saying %q", c.url, err, c.want)
		}
	}
}
