package webhooks_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// TestSignMatchesTheSpecVector: the Standard Webhooks project's published
// test vector (its libraries' tests) signs to the published signature.
func TestSignMatchesTheSpecVector(t *testing.T) {
	key, err := webhooks.SecretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := webhooks.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	h := http.Header{}
	webhooks.SetHeaders(h, key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if h.Get("webhook-id") != "msg_p5jXN8AQM9LWM0D4loKWxJek" || h.Get("webhook-timestamp") != "1614265330" || h.Get("webhook-signature") != got {
		t.Fatalf("headers %v", h)
	}
}

// TestSecretsAreWhsecAndFresh: a new secret is whsec_ and a 32-byte
// base64 key, never the same twice; malformed ones are refused.
func TestSecretsAreWhsecAndFresh(t *testing.T) {
	a, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := webhooks.NewSecret()
	if a == b {
		t.Fatal("two secrets are equal")
	}
	k, err := webhooks.SecretKey(a)
	if err != nil || len(k) != webhooks.KeySize {
		t.Fatalf("key of %s: %d bytes, %v", a, len(k), err)
	}
	for _, bad := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!!"} {
		if _, err := webhooks.SecretKey(bad); err == nil {
			t.Errorf("SecretKey(%q) accepted", bad)
		}
	}
}

// TestBackoffScheduleLastsADay: the documented schedule, and its retries
// add up to more than a day even with the jitter at its lowest.
func TestBackoffScheduleLastsADay(t *testing.T) {
	want := []time.Duration{5 * time.Second, 20 * time.Second, 80 * time.Second, 320 * time.Second, 1280 * time.Second,
		5120 * time.Second, 20480 * time.Second, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour}
	var total time.Duration
	for n := 1; n <= webhooks.Retries; n++ {
		if got := webhooks.Backoff(n); got != want[n-1] {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, want[n-1])
		}
		total += webhooks.Backoff(n)
	}
	if low := time.Duration(float64(total) * 0.8); low < 24*time.Hour {
		t.Errorf("the schedule lasts %s (%s with jitter at -20%%), want at least a day", total, low)
	}
	if webhooks.DisableAfter <= total {
		t.Errorf("DisableAfter %s is within one delivery's schedule %s", webhooks.DisableAfter, total)
	}
}
