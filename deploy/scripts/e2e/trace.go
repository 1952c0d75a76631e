package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// chatHistoryPath is a chat route anyone may call: the channel's history.
const chatHistoryPath = chatPrefix + "/api/v1/messages?limit=1"

// otlpSink is an OTLP/HTTP receiver that keeps what it is sent: the services export
// their spans to it (OTEL_EXPORTER_OTLP_ENDPOINT), and a trace id is found in the
// protobuf bodies as its 16 raw bytes.
type otlpSink struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (k *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "want POST /v1/traces", http.StatusBadRequest)
		return
	}
	k.mu.Lock()
	k.bodies = append(k.bodies, b)
	k.mu.Unlock()
	// An empty ExportTraceServiceResponse: all accepted.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (k *otlpSink) has(traceID []byte) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, b := range k.bodies {
		if bytes.Contains(b, traceID) {
			return true
		}
	}
	return false
}

// trace: a request through the proxy with a traceparent of ours, to geoip and to chat,
// is continued by the service: its access line carries our trace id (read with -logs),
// and the span it exports (to -otlp-listen, where the services are told to send them)
// is in our trace. The proxy must pass the header through untouched.
func (r *runner) trace(ctx context.Context) {
	if r.otlpListen == "" || r.logsCmd == "" {
		r.check("trace scenario flags", func() error { return fmt.Errorf("trace needs -otlp-listen and -logs") })
		return
	}
	sink := &otlpSink{}
	ln, err := net.Listen("tcp", r.otlpListen)
	if !r.check("OTLP sink listens on "+r.otlpListen, func() error { return err }) {
		return
	}
	srv := &http.Server{Handler: sink, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	for _, tc := range []struct{ service, path string }{
		{"geoip", geoipLookupPath},
		{"chat", chatHistoryPath},
	} {
		id := make([]byte, 16)
		parent := make([]byte, 8)
		_, _ = rand.Read(id)
		_, _ = rand.Read(parent)
		traceID := hex.EncodeToString(id)
		r.check(tc.service+" continues the traceparent of GET "+tc.path, func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base.String()+tc.path, nil)
			if err != nil {
				return err
			}
			req.Header.Set("traceparent", "00-"+traceID+"-"+hex.EncodeToString(parent)+"-01")
			res, err := r.http.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", res.StatusCode)
			}
			// Spans leave in batches (every 5 s by default); the log line at once.
			want := `"trace_id":"` + traceID + `"`
			var logged, exported bool
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
				if !logged {
					out, err := exec.CommandContext(ctx, "bash", "-c", r.logsCmd+" "+tc.service).Output()
					if err != nil {
						return fmt.Errorf("-logs %q: %w", r.logsCmd, err)
					}
					logged = strings.Contains(string(out), want)
				}
				exported = exported || sink.has(id)
				if logged && exported {
					return nil
				}
			}
			return fmt.Errorf("trace %s: in %s's access log %v, in an exported span %v", traceID, tc.service, logged, exported)
		})
	}
}
