package apiserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/internal/schema"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// Issue 13, finding 1 and 3: a hostile body costs bounded work and gets a
// small answer.

type hostileBatchIn struct {
	Body []string `minItems:"1" maxItems:"100"`
}

type hostileListIn struct {
	Body []string // no maxItems: the body limit is the only bound
}

type hostileObjIn struct {
	Body struct {
		Name string `json:"name"`
	}
}

func hostileServer(t testing.TB) *apiserver.Server[struct{}] {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:       func(string) string { return "" },
		Logger:       testkit.Logger(),
		RateLimitMax: 1_000_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(c *apiserver.Context[struct{}], _ any) (apiserver.NoBody, error) { return apiserver.NoBody{}, nil }
	apiserver.Register(s, apiserver.Operation{Method: "POST", URL: "/batch"},
		func(c *apiserver.Context[struct{}], in *hostileBatchIn) (apiserver.NoBody, error) { return ok(c, in) })
	apiserver.Register(s, apiserver.Operation{Method: "POST", URL: "/list"},
		func(c *apiserver.Context[struct{}], in *hostileListIn) (apiserver.NoBody, error) { return ok(c, in) })
	apiserver.Register(s, apiserver.Operation{Method: "POST", URL: "/obj"},
		func(c *apiserver.Context[struct{}], in *hostileObjIn) (apiserver.NoBody, error) { return ok(c, in) })
	return s
}

// zeroArray is a JSON array of n zeros: about 2n bytes, each item of the
// wrong type for a string.
func zeroArray(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
}

func unknownObject(n int) string {
	var b strings.Builder
	b.WriteString(`{"name":"x"`)
	for i := range n {
		fmt.Fprintf(&b, `,"f%05d":0`, i)
	}
	b.WriteByte('}')
	return b.String()
}

type errorBody struct {
	StatusCode     int                    `json:"statusCode"`
	Message        string                 `json:"message"`
	Details        []apiserver.FieldError `json:"details"`
	DetailsOmitted int                    `json:"detailsOmitted"`
}

func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestHostileBodiesGetSmallAnswers(t *testing.T) {
	ts := httptest.NewServer(hostileServer(t).Handler())
	defer ts.Close()
	const answerLimit = 64 << 10
	rows := []struct {
		name, path, body string
		details, omitted int
		first            string
	}{
		// 524k items against maxItems 100: one finding, the items unread.
		{"zeros past maxItems", "/batch", zeroArray(524_000), 1, 0, "body must have at most 100 items, got 524000"},
		// No maxItems: every item is wrong, 20 are listed, the rest counted.
		{"zeros without maxItems", "/list", zeroArray(524_000), schema.MaxFindings, 524_000 - schema.MaxFindings, "body[0] expected a string, got a number"},
		{"90k unknown fields", "/obj", unknownObject(90_000), schema.MaxFindings, 90_000 - schema.MaxFindings, "body.f00000 is not an allowed field"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if len(r.body) > apiserver.DefaultBodyLimit {
				t.Fatalf("the body (%d bytes) must fit the limit to reach validation", len(r.body))
			}
			status, b := postJSON(t, ts.URL+r.path, r.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d: %.200s", status, b)
			}
			if len(b) >= answerLimit {
				t.Fatalf("the answer is %d bytes, want under %d", len(b), answerLimit)
			}
			var e errorBody
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			if len(e.Details) != r.details || e.DetailsOmitted != r.omitted {
				t.Fatalf("details %d + detailsOmitted %d, want %d + %d", len(e.Details), e.DetailsOmitted, r.details, r.omitted)
			}
			if got := e.Details[0].Field + " " + e.Details[0].Message; got != r.first {
				t.Fatalf("first finding %q, want %q", got, r.first)
			}
			if total := r.details + r.omitted; total > 1 && !strings.Contains(e.Message, fmt.Sprintf("and %d more", total-5)) {
				t.Fatalf("the message does not count the rest: %q", e.Message)
			}
		})
	}
}

// BenchmarkHostileBody runs the 1 MB bodies of issue 13 through the
// server's handler (read, decode, validate, answer) and reports the
// process CPU time per request, garbage collection included: the target
// is under 50 ms of CPU per 1 MB body.
func BenchmarkHostileBody(b *testing.B) {
	h := hostileServer(b).Handler()
	for _, bc := range []struct{ name, path, body string }{
		{"zeros-1MB-maxItems", "/batch", zeroArray(524_000)},
		{"zeros-1MB-nolimit", "/list", zeroArray(524_000)},
		{"unknown-90k-1MB", "/obj", unknownObject(90_000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			before := cpuTime()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				req := httptest.NewRequest("POST", bc.path, strings.NewReader(bc.body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest || rec.Body.Len() >= 64<<10 {
					b.Fatalf("status %d, %d bytes", rec.Code, rec.Body.Len())
				}
				b.ReportMetric(float64(rec.Body.Len()), "answer-bytes")
			}
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
