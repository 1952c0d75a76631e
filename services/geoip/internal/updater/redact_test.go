package updater_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/sample"
	"github.com/apistack/platform/services/geoip/internal/updater"
)

// Issue 13, finding 8: the updater logged the download URL with its token when the
// service answered a text that echoed it.
func TestSecretsNeverReachErrorsOrLogs(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect/" {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere?token=0therS3cret&file=x", http.StatusFound)
			return
		}
		io.WriteString(w, "Invalid request: "+r.URL.String()+" (user "+r.Header.Get("Authorization")+")")
	}))
	defer echo.Close()
	host := strings.TrimPrefix(echo.URL, "http://")
	rows := []struct {
		name, url string
		secrets   []string
	}{
		{"text answer echoing the URL", echo.URL + "/download/", []string{"t0k3n/+x"}},
		{"credentials and a key in the configured URL", "http://mirror:hunter2@" + host + "/download/?key=m1rrorkey", []string{"t0k3n/+x", "hunter2", "m1rrorkey", "bWlycm9yOmh1bnRlcjI="}},
		{"unreachable mirror", "http://mirror:hunter2@127.0.0.1:1/download/?key=m1rrorkey", []string{"t0k3n/+x", "hunter2", "m1rrorkey"}},
		{"redirect to another token", echo.URL + "/redirect/", []string{"t0k3n/+x", "0therS3cret"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			m, err := dbfile.New(dbfile.Config{Fallback: sample.Open, PollInterval: -1, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var logs testkit.Buffer
			u, err := updater.New(updater.Config{Token: "t0k3n/+x", Product: "DB11LITEBINIPV6",
				Target: filepath.Join(t.TempDir(), "x.BIN"), URL: r.url, Interval: time.Hour,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}, m)
			if err != nil {
				t.Fatal(err)
			}
			err = u.Update(context.Background())
			if err == nil {
				t.Fatal("the update succeeded")
			}
			// Run: the target is missing, so it updates at once and logs the failure.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); u.Run(ctx) }()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), "database update failed") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			<-done
			text := err.Error() + "\n" + logs.String()
			if !strings.Contains(text, "database update failed") || !strings.Contains(text, "REDACTED") {
				t.Fatalf("no redacted failure logged: %s", text)
			}
			for _, s := range r.secrets {
				if strings.Contains(text, s) || strings.Contains(text, strings.ReplaceAll(s, "/", "%2F")) {
					t.Errorf("%q leaked: %s", s, text)
				}
			}
			t.Logf("%s", err)
		})
	}
}
