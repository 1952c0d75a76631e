package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHTTPSendsAreCounted: chat_messages_total{transport="http"} counts
// each message POST /messages/send stored, and nothing for a refused one.
func TestHTTPSendsAreCounted(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	count := func() float64 {
		t.Helper()
		n, err := testutil.GatherAndCount(s.srv.Registry(), "chat_messages_total")
		if err != nil || n != 1 {
			t.Fatalf("chat_messages_total series: %d, %v", n, err)
		}
		mfs, err := s.srv.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "chat_messages_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "transport" && l.GetValue() == "http" {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		t.Fatal("no chat_messages_total{transport=\"http\"}")
		return 0
	}
	if n := count(); n != 0 {
		t.Fatalf("count before any send: %v", n)
	}
	s.send(adminToken, "general", "one")
	s.send(adminToken, "general", "two")
	s.must(http.StatusBadRequest, http.MethodPost, "/api/v1/messages/send", adminToken, map[string]any{"message": ""}, nil)
	if n := count(); n != 2 {
		t.Fatalf("chat_messages_total{transport=\"http\"} = %v after two stored sends and one refused, want 2", n)
	}
}
