package apiserver_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// Health checks are polled every few seconds by every orchestrator: their access lines
// are debug, not info, while other requests stay at info.
func TestHealthChecksAreNotLoggedAtInfo(t *testing.T) {
	for _, tc := range []struct {
		level     slog.Level
		wantProbe bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var out testkit.Buffer
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

// RequestID is the id the answer carries, generated or honoured, in the handler and in
// the log line of a failed request; a client's unusable id is neither.
func TestRequestIDIsTheOneAnswered(t *testing.T) {
	var out testkit.Buffer
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(&out, nil)),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var seen string
	apiserver.Register(s, apiserver.Operation{Method: http.MethodGet, URL: "/id"}, func(c *apiserver.Context[struct{}], _ *struct{}) (struct{}, error) {
		seen = apiserver.RequestID(c.Context)
		return struct{}{}, nil
	})
	apiserver.Register(s, apiserver.Operation{Method: http.MethodGet, URL: "/fail"}, func(c *apiserver.Context[struct{}], _ *struct{}) (struct{}, error) {
		return struct{}{}, errors.New("disk on fire")
	})
	for _, tc := range []struct{ name, sent string }{{"generated", ""}, {"honoured", "abc-123"}, {"replaced", "<script>"}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/id", "/fail"} {
				seen = ""
				req := httptest.NewRequest(http.MethodGet, path, nil)
				if tc.sent != "" {
					req.Header.Set("X-Request-ID", tc.sent)
				}
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				id := rec.Header().Get("X-Request-Id")
				if id == "" || id == "<script>" || (tc.sent == "abc-123" && id != tc.sent) {
					t.Fatalf("GET %s: answered X-Request-ID %q for %q", path, id, tc.sent)
				}
				if path == "/id" && seen != id {
					t.Errorf("GET %s: the handler's RequestID is %q, the answer's %q", path, seen, id)
				}
				if path == "/fail" && !strings.Contains(out.String(), `msg="request failed" request_id=`+id+" ") {
					t.Errorf("GET %s: no failure logged with request_id=%s; log:\n%s", path, id, out.String())
				}
			}
		})
	}
}
