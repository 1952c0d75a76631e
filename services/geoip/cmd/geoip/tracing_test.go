package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/tracing/tracingtest"
)

// The binary traces a lookup from its caller's trace when OTEL_EXPORTER_OTLP_ENDPOINT is
// set: the server span is in the caller's trace, named by the route template (not the
// address asked about), the rate limiter's Redis check is its child, the access line
// names the trace, and SIGTERM flushes the spans before the process exits.
func TestLookupIsTracedIntoRedis(t *testing.T) {
	const (
		traceID = "0af7651916cd43dd8448eb211c80319c"
		parent  = "b7ad6b7169203331"
	)
	rcv := tracingtest.Start(t)
	p := startGeoip(t, map[string]string{"REDIS_URL": redistest.Start(t).URL(), "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL})
	req, _ := http.NewRequest(http.MethodGet, p.Base+"/8.8.8.8/json/", nil)
	req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("lookup: %s", res.Status)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Logs.String(), `"trace_id":"`+traceID+`"`) {
		t.Errorf("no access line with the trace id:\n%s", p.Logs.String())
	}
	spans := rcv.Spans()
	var lookup *tracingtest.Span
	for i, sp := range spans {
		if sp.TraceID() == traceID && sp.ParentID() == parent {
			lookup = &spans[i]
		}
	}
	if lookup == nil {
		t.Fatalf("no span for the lookup in the caller's trace; received %s", tracingtest.Describe(spans))
	}
	if lookup.GetName() != "GET /:ip/json/" || lookup.Service != "geoip" {
		t.Errorf("lookup span %q of %q, want named by the route template, of geoip", lookup.GetName(), lookup.Service)
	}
	var limiter bool
	for _, sp := range spans {
		if sp.ParentID() == lookup.SpanID() && sp.GetName() == "ratelimit" && sp.Attr("db.system") == "redis" {
			limiter = true
		}
	}
	if !limiter {
		t.Fatalf("no rate-limit check under the lookup; received %s", tracingtest.Describe(spans))
	}
}
