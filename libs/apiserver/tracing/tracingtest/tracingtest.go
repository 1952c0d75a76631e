// Package tracingtest is an OTLP trace receiver on loopback for tests: it decodes what a
// real exporter sends (OTLP/HTTP protobuf, or OTLP/gRPC) and keeps the spans.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Receiver collects the spans exported to it.
type Receiver struct {
	// URL is the receiver's base URL, what OTEL_EXPORTER_OTLP_ENDPOINT names.
	URL string

	mu      sync.Mutex
	spans   []Span
	exports int
	notify  chan struct{} // closed and replaced on every export
	header  http.Header
}

// Span is one received span with the service and scope it came from.
type Span struct {
	*tracepb.Span
	Service string // the resource's service.name
	Scope   string // the instrumentation scope's name
}

// TraceID is the span's trace id in hex, as a traceparent writes it.
func (s Span) TraceID() string { return hex.EncodeToString(s.Span.GetTraceId()) }

// SpanID is the span's id in hex.
func (s Span) SpanID() string { return hex.EncodeToString(s.Span.GetSpanId()) }

// ParentID is the parent span's id in hex, "" for a root span.
func (s Span) ParentID() string { return hex.EncodeToString(s.Span.GetParentSpanId()) }

// Attr is the attribute key's value as a string ("" when absent); ints and bools are
// written as Go does.
func (s Span) Attr(key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return valueString(kv.GetValue())
		}
	}
	return ""
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

func newReceiver() *Receiver { return &Receiver{notify: make(chan struct{})} }

// Start runs an OTLP/HTTP receiver (POST /v1/traces, protobuf, gzip or not) until the
// test ends.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	r := newReceiver()
	srv := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	tb.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// StartGRPC runs an OTLP/gRPC receiver until the test ends.
func StartGRPC(tb testing.TB) *Receiver {
	tb.Helper()
	r := newReceiver()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("tracingtest: listen: %v", err)
	}
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, grpcService{r: r})
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(srv.Stop)
	r.URL = "http://" + ln.Addr().String()
	return r
}

type grpcService struct {
	collectorpb.UnimplementedTraceServiceServer
	r *Receiver
}

func (g grpcService) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	g.r.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "want POST /v1/traces", http.StatusNotFound)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "want application/x-protobuf, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, 64<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.header = req.Header.Clone()
	r.mu.Unlock()
	r.add(&msg)
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) add(msg *collectorpb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.spans = append(r.spans, Span{Span: sp, Service: service, Scope: ss.GetScope().GetName()})
			}
		}
	}
	r.exports++
	close(r.notify)
	r.notify = make(chan struct{})
}

// Spans are the spans received so far, in the order they came.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Header is the last OTLP/HTTP export's request header (nil before one): the exporter's
// headers and Content-Encoding.
func (r *Receiver) Header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.header.Clone()
}

// Exports counts the export requests received.
func (r *Receiver) Exports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

// Wait returns the spans received once done accepts them, or fails the test after
// timeout with what came.
func (r *Receiver) Wait(tb testing.TB, timeout time.Duration, done func([]Span) bool) []Span {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		spans, next := append([]Span(nil), r.spans...), r.notify
		r.mu.Unlock()
		if done(spans) {
			return spans
		}
		select {
		case <-next:
		case <-deadline.C:
			tb.Fatalf("tracingtest: after %s, the spans received do not do: %s", timeout, Describe(spans))
			return nil
		}
	}
}

// Describe lists spans one a line (name, ids, parent), for a failure message.
func Describe(spans []Span) string {
	s := ""
	for _, sp := range spans {
		s += "\n  " + sp.Service + " " + sp.GetName() + " trace=" + sp.TraceID() + " span=" + sp.SpanID() + " parent=" + sp.ParentID()
	}
	if s == "" {
		return "none"
	}
	return s
}
