package apiserver_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
)

// lockedBuffer is an io.Writer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Health checks are polled every few seconds by every orchestrator: their access lines
// are debug, not info, while other requests stay at info.
func TestHealthChecksAreNotLoggedAtInfo(t *testing.T) {
	for _, tc := range []struct {
		level     slog.Level
		wantProbe bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var out lockedBuffer
			s, err := apiserver.New(apiserver.Config[struct{}]{
				Getenv: func(string) string { return "" },
				Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tc.level})),
			})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			for _, p := range []string{"/healthz", "/readyz", "/openapi.json"} {
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("GET %s: status %d", p, rec.Code)
				}
			}
			logged := out.String()
			if !strings.Contains(logged, "path=/openapi.json") {
				t.Fatalf("other requests must stay logged at %s; log:\n%s", tc.level, logged)
			}
			for _, p := range []string{"/healthz", "/readyz"} {
				if got := strings.Contains(logged, "path="+p); got != tc.wantProbe {
					t.Errorf("at %s, %s logged = %t, want %t; log:\n%s", tc.level, p, got, tc.wantProbe, logged)
				}
			}
		})
	}
}
