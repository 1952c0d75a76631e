package apiserver_test

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/apistack/platform/libs/apiserver"
)

// TestRequestsInFlight: http_requests_in_flight counts the request being served, and
// nothing once it is answered.
func TestRequestsInFlight(t *testing.T) {
	s := quietServer(t)
	inFlight := func() float64 {
		mfs, err := s.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "http_requests_in_flight" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no http_requests_in_flight")
		return 0
	}
	var during float64
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/busy"},
		func(_ *apiserver.Context[struct{}], _ *struct{}) (kindOut, error) {
			during = inFlight()
			return kindOut{}, nil
		})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/busy", nil))
	if rec.Code != 200 || during != 1 || inFlight() != 0 {
		t.Errorf("status %d; in flight %v during the request and %v after, want 1 and 0", rec.Code, during, inFlight())
	}
	if n := testutil.CollectAndCount(s.Registry(), "http_requests_in_flight"); n != 1 {
		t.Errorf("%d series of http_requests_in_flight", n)
	}
}
