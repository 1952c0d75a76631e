package apiserver_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// A health detail joins /healthz's body, read at each request; the status stays 200 and
// "ok" whatever it says, and a name taken or reserved is refused.
func TestHealthDetailJoinsHealthz(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[struct{}]{Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	stale := false
	if err := s.AddHealthDetail("data", func() any { return map[string]bool{"stale": stale} }); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"data", "status", ""} {
		if err := s.AddHealthDetail(name, func() any { return nil }); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	get := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v", rec.Body, err)
		}
		return rec.Code, body
	}
	for _, want := range []bool{false, true} {
		stale = want
		code, body := get()
		data, _ := body["data"].(map[string]any)
		if code != 200 || body["status"] != "ok" || data["stale"] != want {
			t.Errorf("stale=%v: %d %v", want, code, body)
		}
	}
}
