// Package webhookstest is a webhook receiver for tests: it records every
// request and verifies their signatures with verify.py, a second
// implementation of Standard Webhooks in Python's standard library.
package webhookstest

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

//go:embed verify.py
var verifyPy []byte

// Request is one request received.
type Request struct {
	ID        string
	Timestamp string
	Signature string
	Body      []byte
}

// Receiver is a loopback HTTP server that records requests and answers
// with Answer (200 with an empty body by default).
type Receiver struct {
	*httptest.Server

	mu   sync.Mutex
	reqs []Request
	// answer decides the status and body of each request.
	answer func(Request) (int, string)
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{answer: func(Request) (int, string) { return http.StatusOK, "" }}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	rq := Request{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"),
		Signature: req.Header.Get("webhook-signature"), Body: body}
	r.mu.Lock()
	answer := r.answer
	r.mu.Unlock()
	status, out := answer(rq)
	if status >= 200 && status < 300 {
		r.mu.Lock()
		r.reqs = append(r.reqs, rq)
		r.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, out)
}

// Answer sets how the receiver answers from now on; only requests answered
// 2xx are recorded.
func (r *Receiver) Answer(fn func(Request) (int, string)) {
	r.mu.Lock()
	r.answer = fn
	r.mu.Unlock()
}

// Requests returns the requests recorded so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Verify checks every request's signature against secret with verify.py
// (skipped, saying so, when python3 is missing, unless REQUIRE_PYTHON=1).
func Verify(t testing.TB, secret string, reqs []Request) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("REQUIRE_PYTHON") == "1" {
			t.Fatal("python3 not found (REQUIRE_PYTHON=1)")
		}
		t.Skip("python3 not found: signatures not verified independently")
	}
	script := filepath.Join(t.TempDir(), "verify.py")
	if err := os.WriteFile(script, verifyPy, 0o600); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Secret    string `json:"secret"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		BodyB64   string `json:"body_b64"`
		Signature string `json:"signature"`
	}
	in := make([]rec, 0, len(reqs))
	for _, r := range reqs {
		in = append(in, rec{secret, r.ID, r.Timestamp, base64.StdEncoding.EncodeToString(r.Body), r.Signature})
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("verify.py: %v\n%s", err, out)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || n != len(reqs) {
		t.Fatalf("verify.py verified %q, want %d", out, len(reqs))
	}
}
