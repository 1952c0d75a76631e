package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/libs/apiserver/openapitest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// client sends the tests' requests; newTestServer points it at a
// transport that checks every answer against the server's own document.
var (
	client   = http.DefaultClient
	contract *openapitest.Validator
)

func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, _, err := NewServer(apiserver.Config[struct{}]{
		APIToken: "example-token-0123456789",
		Getenv:   func(string) string { return "" },
		Logger:   testkit.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	v, err := openapitest.FromHandler(srv.Handler())
	if err != nil {
		t.Fatal(err)
	}
	client, contract = &http.Client{Transport: v.Transport(t, nil)}, v
	t.Cleanup(func() { client, contract = http.DefaultClient, nil })
	return ts
}

func do(t *testing.T, method, url, body string, authed bool) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authed {
		req.Header.Set("Authorization", "Bearer example-token-0123456789")
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestItemsLifecycle(t *testing.T) {
	ts := newTestServer(t)
	steps := []struct {
		method, path, body string
		authed             bool
		status             int
		contains           string
	}{
		{"GET", "/items", "", false, 200, `{"items":[],"total":0}`},
		{"POST", "/items", `{"name":"Widget","price":2.5}`, false, 401, "Missing authorization header"},
		{"POST", "/items", `{"name":""}`, true, 400, `"field":"body.name"`},
		{"POST", "/items", `{"name":"Widget","price":2.5}`, true, 201, `"name":"Widget"`},
		{"POST", "/items", `{"name":"Gadget"}`, true, 201, `"id":"2"`},
		{"GET", "/items?limit=1&offset=1", "", false, 200, `"total":2`},
		{"GET", "/items?limit=1000", "", false, 400, "query.limit"},
		{"GET", "/items/1", "", false, 200, `"price":2.5`},
		{"PUT", "/items/1", `{"name":"Widget 2"}`, true, 200, `"name":"Widget 2"`},
		{"DELETE", "/items/1", "", true, 204, ""},
		{"GET", "/items/1", "", false, 404, "Item 1 not found"},
		{"GET", "/items/abc", "", false, 400, "params.id"},
		{"PATCH", "/items/1", `{}`, true, 405, "not allowed"},
		{"HEAD", "/items", "", false, 200, ""},
	}
	for _, s := range steps {
		res, body := do(t, s.method, ts.URL+s.path, s.body, s.authed)
		if res.StatusCode != s.status || !strings.Contains(body, s.contains) {
			t.Fatalf("%s %s: %d %s; want %d containing %q", s.method, s.path, res.StatusCode, body, s.status, s.contains)
		}
	}
	if n := contract.Checked(); n != len(steps) {
		t.Errorf("%d answers checked against the document, want %d", n, len(steps))
	}
}

// TestExamplesMatchTheirSchemas: every example in the document validates
// against its own schema (kin-openapi, JSON Schema 2020-12).
func TestExamplesMatchTheirSchemas(t *testing.T) {
	srv, _, err := NewServer(apiserver.Config[struct{}]{APIToken: "example-token-0123456789", Getenv: func(string) string { return "" }, Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	v, err := openapitest.FromHandler(srv.Handler())
	if err != nil {
		t.Fatal(err)
	}
	checked, errs := openapitest.ExampleErrors(v.Doc())
	for _, err := range errs {
		t.Error(err)
	}
	if checked < 5 {
		t.Errorf("only %d examples checked; the example declares more", checked)
	}
}

// TestGeneratedClient: a client oapi-codegen generates from the served
// document compiles and drives the example (create, read, list, a refused
// limit, replace, delete) against a live server; see
// testdata/genclient/client_test.go.
func TestGeneratedClient(t *testing.T) {
	ts := newTestServer(t)
	res, doc := do(t, "GET", ts.URL+"/openapi.json", "", false)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", res.StatusCode)
	}
	openapitest.GeneratedClient{
		Document: []byte(doc),
		Tests:    []string{filepath.Join("testdata", "genclient", "client_test.go")},
		Env:      []string{"API_TOKEN=example-token-0123456789"},
	}.Run(t, ts.URL)
}

// TestDocsRenderInBrowser loads /docs in headless Chromium and checks that
// Swagger UI rendered the example's operations from /openapi.json.
func TestDocsRenderInBrowser(t *testing.T) {
	ts := newTestServer(t)
	ctx := browsertest.New(t, 60*time.Second)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(`.opblock-summary-path`)),
	); err != nil {
		t.Fatalf("render /docs: %v", err)
	}
	paths, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.opblock-summary-path')).map(e => e.innerText.replace(/\u200b/g, ''))`))
	if err != nil {
		t.Fatalf("read operations: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.info .title`)))
	if err != nil {
		t.Fatalf("read title: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	got := strings.Join(paths, " ")
	for _, want := range []string{"/items", "/items/{id}"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered operations %v lack %s", paths, want)
		}
	}
	if len(paths) != 5 {
		t.Errorf("rendered %d operations, want 5: %v", len(paths), paths)
	}
	if !strings.Contains(title, "Items example") {
		t.Errorf("title = %q", title)
	}
	if dir := os.Getenv("TEST_ARTIFACTS"); dir != "" {
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, "items-docs.png"), shot, 0o644)
	}
}

// TestListWhileWriting: lists are answered from the stored slice without a
// copy, so writes must never change a slice a list may still be encoding
// (run with -race; a list also always sees whole items).
func TestListWhileWriting(t *testing.T) {
	ts := newTestServer(t)
	for range 3 {
		do(t, "POST", ts.URL+"/items", `{"name":"a","price":1}`, true)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10 { // the example keeps its default limit: 100 per client
			do(t, "PUT", ts.URL+"/items/2", `{"name":"b`+strconv.Itoa(i)+`","price":2}`, true)
			do(t, "POST", ts.URL+"/items", `{"name":"c"}`, true)
			do(t, "DELETE", ts.URL+"/items/"+strconv.Itoa(4+i), "", true)
		}
	}()
	for range 20 {
		res, body := do(t, "GET", ts.URL+"/items?limit=100", "", false)
		if res.StatusCode != 200 || !strings.Contains(body, `"total":`) {
			t.Fatalf("list: %d %s", res.StatusCode, body)
		}
	}
	<-done
}
