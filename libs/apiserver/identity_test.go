package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/ratelimit"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// keyLimit identifies callers by an X-Key header: "gold-*" keys are on the gold plan,
// "own-*" carry their own limit, "bad" names nobody.
var keyLimit = &apiserver.IdentityLimit{
	Identify: func(c *gin.Context) (apiserver.Principal, bool, error) {
		k := c.GetHeader("X-Key")
		switch {
		case k == "":
			return apiserver.Principal{}, false, nil
		case strings.HasPrefix(k, "gold-"):
			return apiserver.Principal{ID: k, Plan: "gold"}, true, nil
		case strings.HasPrefix(k, "own-"):
			return apiserver.Principal{ID: k, Limit: ratelimit.Limit{Max: 2, Window: time.Minute}}, true, nil
		}
		return apiserver.Principal{}, false, apiserver.ForbiddenError("Unknown key")
	},
	Plans:    map[string]ratelimit.Limit{"gold": {Max: 6, Window: time.Minute}},
	Security: []apiserver.SecurityScheme{{Name: "key", Type: "apiKey", In: "header", Param: "X-Key", Description: "An API key"}},
	Errors:   map[int]string{http.StatusForbidden: "Unknown key"},
}

func identityServer(t *testing.T, redisURL string) (*apiserver.Server[struct{}], *httptest.Server) {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv:          func(string) string { return "" },
		Logger:          testkit.Logger(),
		RedisURL:        redisURL,
		RateLimitMax:    3,
		RateLimitWindow: "1m",
		TrustedProxies:  []string{"127.0.0.1", "::1"},
		IdentityLimit:   keyLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items"},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit}, nil
		})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s, ts
}

func getWith(t *testing.T, url, client string, header http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("X-Forwarded-For", client)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	return res
}

func passed(t *testing.T, n int, url, client string, h http.Header) (ok int, last *http.Response) {
	t.Helper()
	for range n {
		last = getWith(t, url, client, h)
		switch last.StatusCode {
		case 200:
			ok++
		case 429:
		default:
			t.Fatalf("status %d", last.StatusCode)
		}
	}
	return ok, last
}

// TestIdentityLimitAcrossReplicas: on a real Redis, two replicas count a key's plan
// together, independent of the address it calls from; anonymous callers keep the
// per-address limit; RateLimit-Limit names the limit that applied; usage counts both
// replicas' requests of the key.
func TestIdentityLimitAcrossReplicas(t *testing.T) {
	rds := redistest.Start(t)
	sa, a := identityServer(t, rds.URL())
	sb, b := identityServer(t, rds.URL())
	gold := http.Header{"X-Key": {"gold-acme"}}
	okA, _ := passed(t, 4, a.URL+"/items", "203.0.113.1", gold)
	okB, last := passed(t, 4, b.URL+"/items", "198.51.100.7", gold) // another address, same key
	if okA+okB != 6 {
		t.Fatalf("gold key passed %d of 8 across replicas, want its plan's 6", okA+okB)
	}
	if last.StatusCode != 429 || last.Header.Get("RateLimit-Limit") != "6" || last.Header.Get("Retry-After") == "" {
		t.Errorf("last = %d, RateLimit-Limit %q, Retry-After %q", last.StatusCode, last.Header.Get("RateLimit-Limit"), last.Header.Get("Retry-After"))
	}
	// The address the key used still has its whole anonymous limit.
	okAnon, res := passed(t, 4, a.URL+"/items", "203.0.113.1", nil)
	if okAnon != 3 || res.Header.Get("RateLimit-Limit") != "3" {
		t.Errorf("anonymous from the key's address: %d passed, RateLimit-Limit %q; want 3, 3", okAnon, res.Header.Get("RateLimit-Limit"))
	}
	// A principal's own limit beats the plans.
	if ok, res := passed(t, 3, a.URL+"/items", "203.0.113.9", http.Header{"X-Key": {"own-x"}}); ok != 2 || res.Header.Get("RateLimit-Limit") != "2" {
		t.Errorf("own limit: %d passed, RateLimit-Limit %q", ok, res.Header.Get("RateLimit-Limit"))
	}
	// Usage: flushed by Stop, read from Redis by the other replica.
	if err := sb.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		u, err := sa.Usage(context.Background(), "gold-acme")
		if err != nil {
			t.Fatal(err)
		}
		if u.Allowed == 6 && u.Limited == 2 && u.Day == time.Now().UTC().Format(time.DateOnly) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage of gold-acme = %+v, want 6 allowed, 2 limited today", u)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUnknownCredentialSpendsTheAddressLimit: an Identify error is answered as it is,
// but only while the address's limit lasts: guessing keys is limited like anonymous calls.
func TestUnknownCredentialSpendsTheAddressLimit(t *testing.T) {
	_, ts := identityServer(t, "")
	bad := http.Header{"X-Key": {"bad"}}
	var codes []int
	for range 4 {
		codes = append(codes, getWith(t, ts.URL+"/items", "203.0.113.4", bad).StatusCode)
	}
	if want := []int{403, 403, 403, 429}; !equalInts(codes, want) {
		t.Errorf("unknown key: %v, want %v", codes, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// shapeErr is a foreign API's error body.
type shapeErr struct {
	Error  bool   `json:"error"`
	Reason string `json:"reason"`
	Msg    string `json:"message"`
}

var shapeMap = &apiserver.ErrorMap{
	Body: func(e *apiserver.Error) any {
		return shapeErr{Error: true, Reason: http.StatusText(e.Status), Msg: e.Message}
	},
	Example: shapeErr{Error: true, Reason: "Too Many Requests", Msg: "Rate limit exceeded, retry in 60 seconds"},
}

// TestErrorMapCoversTheLibrarysAnswers: every error of a mapped operation (auth, the
// limiter's 429, validation, the handler's, a 500) has the mapped body with its status
// and headers; an unmapped operation of the same server keeps the standard body.
func TestErrorMapCoversTheLibrarysAnswers(t *testing.T) {
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" }, Logger: testkit.Logger(),
		RateLimitMax: 100, RateLimitWindow: "1m", APIToken: "secret-token-0123456789", Env: "production",
	})
	if err != nil {
		t.Fatal(err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/mapped", ErrorMap: shapeMap, Authenticated: true,
		RateLimit: &apiserver.RateLimit{Max: 5, Window: time.Minute}},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) {
			switch in.Sort {
			case "desc":
				return listOut{}, errors.New("disk on fire")
			}
			if in.Flag {
				return listOut{}, apiserver.NotFoundError("No such list")
			}
			return listOut{}, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/plain", Authenticated: true},
		func(c *apiserver.Context[struct{}], in *listIn) (listOut, error) { return listOut{}, nil })
	h := s.Handler()
	do := func(path, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for _, tc := range []struct {
		path, token string
		status      int
		message     string
	}{
		{"/mapped", "", 401, "Missing authorization header"},
		{"/mapped", "wrong", 403, "Invalid token"},
		{"/mapped?limit=0", "secret-token-0123456789", 400, "Validation failed: query.limit must be at least 1"},
		{"/mapped?flag=true", "secret-token-0123456789", 404, "No such list"},
		{"/mapped?sort=desc", "secret-token-0123456789", 500, "Internal Server Error"}, // production: the cause is not shown
		{"/mapped", "secret-token-0123456789", 429, "Rate limit exceeded, retry in 12 seconds"},
	} {
		w := do(tc.path, tc.token)
		var got shapeErr
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != tc.status || !got.Error || got.Msg != tc.message || got.Reason != http.StatusText(tc.status) {
			t.Errorf("%s: %d %s, want %d with message %q", tc.path, w.Code, w.Body, tc.status, tc.message)
		}
		if strings.Contains(w.Body.String(), "statusCode") || strings.Contains(w.Body.String(), "fire") {
			t.Errorf("%s: standard body or cause leaked: %s", tc.path, w.Body)
		}
		switch tc.status {
		case 401:
			if w.Header().Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("401 lost WWW-Authenticate")
			}
		case 429:
			if w.Header().Get("Retry-After") != "12" {
				t.Errorf("429 Retry-After = %q", w.Header().Get("Retry-After"))
			}
		}
	}
	if w := do("/plain", ""); w.Code != 401 || !strings.Contains(w.Body.String(), `"statusCode":401`) {
		t.Errorf("unmapped operation: %d %s", w.Code, w.Body)
	}

	doc := openAPIOf(t, h)
	resp := doc["paths"].(map[string]any)["/mapped"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)
	for _, code := range []string{"400", "401", "403", "429", "500"} {
		sch, _ := json.Marshal(resp[code].(map[string]any)["content"])
		if !strings.Contains(string(sch), `"reason"`) || strings.Contains(string(sch), "ErrorResponse") {
			t.Errorf("/mapped %s documented as %s", code, sch)
		}
	}
}

func openAPIOf(t *testing.T, h http.Handler) map[string]any {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/openapi.json", nil))
	var doc map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestIdentityLimitDocumented: the scheme is published, optional on an operation that
// is not Authenticated, and the 429 says whose limit.
func TestIdentityLimitDocumented(t *testing.T) {
	_, ts := identityServer(t, "")
	res, err := http.Get(ts.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(res.Body).Decode(&doc)
	sc := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)["key"].(map[string]any)
	if sc["type"] != "apiKey" || sc["in"] != "header" || sc["name"] != "X-Key" {
		t.Errorf("scheme = %v", sc)
	}
	op := doc["paths"].(map[string]any)["/items"].(map[string]any)["get"].(map[string]any)
	sec, _ := json.Marshal(op["security"])
	if string(sec) != `[{"key":[]},{}]` {
		t.Errorf("security = %s", sec)
	}
	r429 := op["responses"].(map[string]any)["429"].(map[string]any)
	if !strings.Contains(r429["description"].(string), "principal") {
		t.Errorf("429 = %v", r429)
	}
	if r403 := op["responses"].(map[string]any)["403"].(map[string]any); r403["description"] != "Unknown key" {
		t.Errorf("403 = %v", r403)
	}
}

// TestIdentityLimitAfterAuthentication: on an Authenticated operation the principal is
// the authenticated caller (here a validator's subject, as a JWT's sub), limited per
// subject whatever address it calls from; a failed authentication is answered only
// while the address's limit lasts; the scheme is not optional in OpenAPI.
func TestIdentityLimitAfterAuthentication(t *testing.T) {
	type claims struct{ Sub string }
	s, err := apiserver.New(apiserver.Config[claims]{
		Getenv: func(string) string { return "" }, Logger: testkit.Logger(),
		RateLimitMax: 2, RateLimitWindow: "1m", TrustedProxies: []string{"127.0.0.1", "::1"},
		TokenValidator: func(token string, _ *http.Request) apiserver.AuthResult[claims] {
			if sub, ok := strings.CutPrefix(token, "user-"); ok {
				return apiserver.AuthResult[claims]{Valid: true, Context: claims{Sub: sub}}
			}
			return apiserver.AuthResult[claims]{Valid: false}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	bySub := &apiserver.IdentityLimit{
		Identify: func(c *gin.Context) (apiserver.Principal, bool, error) {
			a, ok := apiserver.AuthFrom[claims](c)
			return apiserver.Principal{ID: "sub:" + a.Sub, Plan: "user"}, ok, nil
		},
		Plans:    map[string]ratelimit.Limit{"user": {Max: 4, Window: time.Minute}},
		Security: []apiserver.SecurityScheme{{Name: "jwt", Type: "http", Scheme: "bearer"}},
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/me", Authenticated: true, IdentityLimit: bySub},
		func(c *apiserver.Context[claims], _ *struct{}) (map[string]string, error) {
			return map[string]string{"sub": c.Auth.Sub}, nil
		})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	var codes []int
	for i := range 6 {
		addr := "203.0.113." + string(rune('1'+i)) // a new address each time: the limit is the subject's
		codes = append(codes, getWith(t, ts.URL+"/me", addr, http.Header{"Authorization": {"Bearer user-ann"}}).StatusCode)
	}
	if want := []int{200, 200, 200, 200, 429, 429}; !equalInts(codes, want) {
		t.Errorf("one subject from six addresses: %v, want %v", codes, want)
	}
	if u, _ := s.Usage(context.Background(), "sub:ann"); u.Allowed != 4 || u.Limited != 2 {
		t.Errorf("usage of sub:ann = %+v", u)
	}
	codes = codes[:0]
	for range 3 {
		codes = append(codes, getWith(t, ts.URL+"/me", "198.51.100.1", http.Header{"Authorization": {"Bearer wrong"}}).StatusCode)
	}
	if want := []int{403, 403, 429}; !equalInts(codes, want) {
		t.Errorf("bad tokens from one address: %v, want %v", codes, want)
	}
	doc := openAPIOf(t, s.Handler())
	op := doc["paths"].(map[string]any)["/me"].(map[string]any)["get"].(map[string]any)
	if sec, _ := json.Marshal(op["security"]); strings.Contains(string(sec), "{}") {
		t.Errorf("an Authenticated operation's security lists the anonymous alternative: %s", sec)
	}
}
