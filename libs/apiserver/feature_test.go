package apiserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

type user struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
}

type listIn struct {
	Limit  int      `query:"limit" minimum:"1" maximum:"100" default:"10" doc:"Page size"`
	Offset int      `query:"offset" minimum:"0" default:"0"`
	Tag    []string `query:"tag" maxLength:"5"`
	Flag   bool     `query:"flag"`
	Sort   string   `query:"sort" enum:"asc,desc" default:"asc"`
}

type listOut struct {
	Limit  int      `json:"limit"`
	Offset int      `json:"offset"`
	Tag    []string `json:"tag"`
	Flag   bool     `json:"flag"`
	Sort   string   `json:"sort"`
	Total  int      `json:"total"`
}

type idIn struct {
	ID string `path:"id" pattern:"^[0-9]+$"`
}

type itemBody struct {
	Name  string   `json:"name" minLength:"1" maxLength:"10"`
	Price float64  `json:"price,omitempty" minimum:"0" default:"1.5"`
	Tags  []string `json:"tags,omitempty" maxLength:"3" maxItems:"2"`
	Email string   `json:"email,omitempty" format:"email"`
}

type createIn struct{ Body itemBody }

type item struct {
	ID    string   `json:"id"`
	Name  string   `json:"name" minLength:"1"`
	Price float64  `json:"price"`
	Tags  []string `json:"tags,omitempty"`
}

type failIn struct {
	Kind string `query:"kind" required:"true"`
}

// ipError is a body of another API's shape, declared with ErrorBodies.
type ipError struct {
	IP     string `json:"ip"`
	Error  bool   `json:"error"`
	Reason string `json:"reason"`
}

type ipIn struct {
	IP string `path:"ip"`
}

type statusErr struct{ code int }

func (e statusErr) Error() string   { return "custom status" }
func (e statusErr) StatusCode() int { return e.code }

const token = "test-token-0123456789"

// newFixture builds a server with every kind of endpoint the rows use.
func newFixture(t *testing.T, env map[string]string, mutate func(*apiserver.Config[user])) *apiserver.Server[user] {
	t.Helper()
	cfg := apiserver.Config[user]{
		APIToken: token,
		APITitle: "Fixture",
		APITags:  []apiserver.Tag{{Name: "items", Description: "Items"}},
		Getenv:   func(k string) string { return env[k] },
		Logger:   testkit.Logger(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := apiserver.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items", Tags: []string{"items"}},
		func(c *apiserver.Context[user], in *listIn) (listOut, error) {
			return listOut{Limit: in.Limit, Offset: in.Offset, Tag: in.Tag, Flag: in.Flag, Sort: in.Sort, Total: 42}, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/items/{id}"},
		func(c *apiserver.Context[user], in *idIn) (item, error) {
			if in.ID == "404" {
				return item{}, apiserver.NotFoundError("Item 404 not found")
			}
			return item{ID: in.ID, Name: "x"}, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "POST", URL: "/items", Authenticated: true, Status: http.StatusCreated},
		func(c *apiserver.Context[user], in *createIn) (item, error) {
			return item{ID: "1", Name: in.Body.Name, Price: in.Body.Price, Tags: in.Body.Tags}, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "DELETE", URL: "/items/:id", Authenticated: true},
		func(c *apiserver.Context[user], in *idIn) (apiserver.NoBody, error) { return apiserver.NoBody{}, nil })
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/me", Authenticated: true},
		func(c *apiserver.Context[user], in *struct{}) (user, error) {
			if !c.Auth.Admin && c.Auth.Name == "guest" {
				return user{}, apiserver.ForbiddenError("Admins only")
			}
			return c.Auth, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/fail"},
		func(c *apiserver.Context[user], in *failIn) (item, error) {
			switch in.Kind {
			case "validation":
				return item{}, apiserver.ValidationError(apiserver.FieldError{Field: "body.name", Message: "taken"})
			case "conflict":
				return item{}, apiserver.ConflictError("Already exists")
			case "statuscoder":
				return item{}, statusErr{code: 418}
			case "plain":
				return item{}, errors.New("database password is hunter2")
			case "panic":
				panic("boom")
			case "badresponse":
				return item{ID: "1", Name: ""}, nil
			case "undeclared":
				return item{}, apiserver.NewBodyError(http.StatusBadRequest, ipError{IP: "x", Error: true, Reason: "Invalid IP Address"}, "Invalid IP address \"x\"")
			case "extra":
				return item{}, apiserver.BadRequestError("Invalid IP Address").With("reason", "Invalid IP Address").With("ip", "x")
			}
			return item{ID: "1", Name: "ok"}, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/lookup/:ip",
		ErrorBodies: []apiserver.ErrorBody{{Status: http.StatusBadRequest, Description: "Not an address",
			Example: ipError{IP: "999.1.1.1", Error: true, Reason: "Invalid IP Address"}}}},
		func(c *apiserver.Context[user], in *ipIn) (item, error) {
			if in.IP == "bad" {
				return item{}, apiserver.NewBodyError(http.StatusBadRequest, ipError{IP: in.IP, Error: true, Reason: "Invalid IP Address"}, "not an address")
			}
			if in.IP == "teapot" { // a status the operation did not declare
				return item{}, apiserver.NewBodyError(http.StatusTeapot, ipError{IP: in.IP, Error: true}, "I'm a teapot")
			}
			return item{}, apiserver.NotFoundError("No " + in.IP)
		})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/limited", RateLimit: &apiserver.RateLimit{Max: 2, Window: time.Minute}},
		func(c *apiserver.Context[user], in *struct{}) (item, error) { return item{ID: "1", Name: "l"}, nil })
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/unlimited", RateLimit: apiserver.NoRateLimit},
		func(c *apiserver.Context[user], in *struct{}) (item, error) { return item{ID: "1", Name: "u"}, nil })
	grp := s.Instance().Group("/raw", s.AuthenticateToken())
	grp.GET("/hello", func(c *gin.Context) { c.String(http.StatusOK, "hello") })
	return s
}

type request struct {
	method, path, body string
	header             map[string]string
	remote             string // peer address, default 192.0.2.1:1234
}

type row struct {
	name    string
	env     map[string]string
	cfg     func(*apiserver.Config[user])
	before  []request // sent first, answers ignored
	req     request
	status  int
	body    []string          // substrings the body must contain
	notBody []string          // substrings it must not contain
	header  map[string]string // exact header values ("" = must be absent)
	check   func(t *testing.T, rec *httptest.ResponseRecorder)
}

func jsonBody(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, rec.Body)
	}
	return m
}

func details(t *testing.T, rec *httptest.ResponseRecorder) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range jsonBody(t, rec)["details"].([]any) {
		m := d.(map[string]any)
		out[m["field"].(string)] = m["message"].(string)
	}
	return out
}

var auth = map[string]string{"Authorization": "Bearer " + token}

func withJSON(h map[string]string) map[string]string {
	out := map[string]string{"Content-Type": "application/json"}
	for k, v := range h {
		out[k] = v
	}
	return out
}

func TestFeatures(t *testing.T) {
	prod := map[string]string{"NODE_ENV": "production"}
	validator := func(c *apiserver.Config[user]) {
		c.TokenValidator = func(tok string, r *http.Request) apiserver.AuthResult[user] {
			switch tok {
			case "alice":
				return apiserver.AuthResult[user]{Valid: true, Context: user{Name: "alice", Admin: true}}
			case "guest":
				return apiserver.AuthResult[user]{Valid: true, Context: user{Name: "guest"}}
			case "storedown":
				return apiserver.AuthResult[user]{Err: &apiserver.Error{Status: 503, Message: "User store unavailable", Header: http.Header{"Retry-After": {"1"}}}}
			}
			return apiserver.AuthResult[user]{Valid: false, Error: "Token revoked"}
		}
	}
	rows := []row{
		// Query coercion, defaults and bounds (the seed's limit/offset).
		{name: "query defaults apply", req: request{method: "GET", path: "/items"}, status: 200,
			body: []string{`"limit":10`, `"offset":0`, `"sort":"asc"`}},
		{name: "query integers are coerced", req: request{method: "GET", path: "/items?limit=5&offset=20"}, status: 200,
			body: []string{`"limit":5`, `"offset":20`}},
		{name: "limit below minimum is 400", req: request{method: "GET", path: "/items?limit=0"}, status: 400,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if got := details(t, rec)["query.limit"]; got != "must be at least 1" {
					t.Errorf("details[query.limit] = %q", got)
				}
			}},
		{name: "limit above maximum is 400", req: request{method: "GET", path: "/items?limit=101"}, status: 400,
			body: []string{`"field":"query.limit"`, "must be at most 100"}},
		{name: "limit=100 is accepted", req: request{method: "GET", path: "/items?limit=100"}, status: 200, body: []string{`"limit":100`}},
		{name: "non-integer limit is 400", req: request{method: "GET", path: "/items?limit=abc"}, status: 400,
			body: []string{`expected an integer, got \"abc\"`}},
		{name: "negative offset is 400", req: request{method: "GET", path: "/items?offset=-1"}, status: 400,
			body: []string{`"field":"query.offset"`}},
		{name: "every violation is listed at once", req: request{method: "GET", path: "/items?limit=0&offset=-1&sort=up&flag=maybe"}, status: 400,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				d := details(t, rec)
				for _, f := range []string{"query.limit", "query.offset", "query.sort", "query.flag"} {
					if d[f] == "" {
						t.Errorf("no detail for %s in %v", f, d)
					}
				}
				if m := jsonBody(t, rec); m["error"] != "Bad Request" || m["statusCode"] != float64(400) {
					t.Errorf("standard keys wrong: %v", m)
				}
			}},
		{name: "repeated query keys make a list", req: request{method: "GET", path: "/items?tag=a&tag=b"}, status: 200,
			body: []string{`"tag":["a","b"]`}},
		{name: "list items are validated", req: request{method: "GET", path: "/items?tag=a&tag=toolong"}, status: 400,
			body: []string{"query.tag", "at most 5 characters"}},
		{name: "booleans are coerced", req: request{method: "GET", path: "/items?flag=true"}, status: 200, body: []string{`"flag":true`}},
		{name: "a single-valued parameter given twice is 400", req: request{method: "GET", path: "/items?limit=1&limit=2"}, status: 400,
			body: []string{"must be given once"}},
		{name: "enum is enforced", req: request{method: "GET", path: "/items?sort=sideways"}, status: 400, body: []string{"must be one of: asc, desc"}},
		{name: "unknown query keys are ignored", req: request{method: "GET", path: "/items?cachebuster=1"}, status: 200},
		{name: "required query parameter", req: request{method: "GET", path: "/fail"}, status: 400, body: []string{`"field":"query.kind","message":"is required"`}},
		// Path parameters.
		{name: "path parameter pattern", req: request{method: "GET", path: "/items/abc"}, status: 400, body: []string{`"field":"params.id"`}},
		{name: "path parameter ok", req: request{method: "GET", path: "/items/7"}, status: 200, body: []string{`"id":"7"`}},
		// Bodies.
		{name: "created with 201 and defaults", req: request{method: "POST", path: "/items", body: `{"name":"pen"}`, header: withJSON(auth)}, status: 201,
			body: []string{`"name":"pen"`, `"price":1.5`}},
		{name: "missing body is 400", req: request{method: "POST", path: "/items", header: withJSON(auth)}, status: 400,
			body: []string{`"field":"body","message":"is required"`}},
		{name: "malformed JSON is 400", req: request{method: "POST", path: "/items", body: `{"name":`, header: withJSON(auth)}, status: 400,
			body: []string{"Malformed JSON"}},
		{name: "trailing data after JSON is 400", req: request{method: "POST", path: "/items", body: `{"name":"a"} {}`, header: withJSON(auth)}, status: 400,
			body: []string{"Malformed JSON"}},
		{name: "wrong content type is 415", req: request{method: "POST", path: "/items", body: `name=a`, header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/x-www-form-urlencoded"}}, status: 415},
		{name: "JSON declared in UTF-16 is 415", req: request{method: "POST", path: "/items", body: `{"name":"pen"}`,
			header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json; charset=utf-16"}}, status: 415,
			body: []string{`charset \"utf-16\" is not supported: JSON is UTF-8`}},
		{name: "JSON declared in Latin-1 is 415", req: request{method: "POST", path: "/items", body: `{"name":"pen"}`,
			header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json; charset=ISO-8859-1"}}, status: 415,
			body: []string{`charset \"ISO-8859-1\" is not supported`}},
		{name: "charset utf-8 in any case is accepted", req: request{method: "POST", path: "/items", body: `{"name":"pen"}`,
			header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": `application/json;charset="UTF-8"`}}, status: 201},
		{name: "invalid UTF-8 in a body string is 400 naming the field", req: request{method: "POST", path: "/items", body: "{\"name\":\"p\xffn\"}", header: withJSON(auth)},
			status: 400, body: []string{`"message":"Request body is not valid UTF-8 (byte 10): JSON must be UTF-8"`, `"field":"body.name","message":"is not valid UTF-8 (byte 10 of the body)"`}},
		{name: "invalid UTF-8 in a list item names the item", req: request{method: "POST", path: "/items", body: "{\"name\":\"pen\",\"tags\":[\"ok\",\"\xc3(\"]}", header: withJSON(auth)},
			status: 400, body: []string{`"field":"body.tags[1]"`}},
		{name: "U+FFFD itself is valid UTF-8", req: request{method: "POST", path: "/items", body: "{\"name\":\"p\uFFFDn\"}", header: withJSON(auth)},
			status: 201, body: []string{"\"name\":\"p\uFFFDn\""}},
		{name: "body over the limit is 413", cfg: func(c *apiserver.Config[user]) { c.BodyLimit = 32 },
			req: request{method: "POST", path: "/items", body: `{"name":"` + strings.Repeat("a", 64) + `"}`, header: withJSON(auth)}, status: 413},
		{name: "unknown body field is 400", req: request{method: "POST", path: "/items", body: `{"name":"a","x":1}`, header: withJSON(auth)}, status: 400,
			body: []string{`"field":"body.x","message":"is not an allowed field"`}},
		{name: "body violations are all listed with paths", req: request{method: "POST", path: "/items", body: `{"name":"","price":-1,"tags":["ok","long!"],"email":"nope"}`, header: withJSON(auth)}, status: 400,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				d := details(t, rec)
				for _, f := range []string{"body.name", "body.price", "body.tags[1]", "body.email"} {
					if d[f] == "" {
						t.Errorf("no detail for %s in %v", f, d)
					}
				}
			}},
		{name: "wrong JSON type is 400", req: request{method: "POST", path: "/items", body: `{"name":5}`, header: withJSON(auth)}, status: 400,
			body: []string{`"field":"body.name","message":"expected a string, got a number"`}},
		// Errors from handlers.
		{name: "handler ValidationError is 400 with its items", req: request{method: "GET", path: "/fail?kind=validation"}, status: 400,
			body: []string{`"message":"Validation failed"`, `"details":[{"field":"body.name","message":"taken"}]`}},
		{name: "NotFoundError is 404", req: request{method: "GET", path: "/items/404"}, status: 404,
			body: []string{`{"statusCode":404,"error":"Not Found","message":"Item 404 not found"}`}},
		{name: "an error with a status keeps it", req: request{method: "GET", path: "/fail?kind=conflict"}, status: 409, body: []string{`"error":"Conflict"`}},
		{name: "a foreign error with StatusCode keeps it", req: request{method: "GET", path: "/fail?kind=statuscoder"}, status: 418},
		{name: "extra body fields", req: request{method: "GET", path: "/fail?kind=extra"}, status: 400, body: []string{`"reason":"Invalid IP Address"`, `"ip":"x"`}},
		{name: "a declared error body is answered in its own shape", req: request{method: "GET", path: "/lookup/bad"}, status: 400,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if got := rec.Body.String(); got != `{"ip":"bad","error":true,"reason":"Invalid IP Address"}` {
					t.Errorf("body = %s", got)
				}
			}},
		{name: "an operation with error bodies keeps the standard body for other errors", req: request{method: "GET", path: "/lookup/x"}, status: 404,
			body: []string{`{"statusCode":404,"error":"Not Found","message":"No x"}`}},
		{name: "a body error of an undeclared status gets the standard body", req: request{method: "GET", path: "/lookup/teapot"}, status: 418,
			body: []string{`{"statusCode":418,"error":"I'm a teapot","message":"I'm a teapot"}`}, notBody: []string{`"reason"`}},
		{name: "a body error on an operation without error bodies gets the standard body", req: request{method: "GET", path: "/fail?kind=undeclared"}, status: 400,
			body: []string{`{"statusCode":400,"error":"Bad Request","message":"Invalid IP address \"x\""}`}},
		{name: "OpenAPI documents a declared error body", req: request{method: "GET", path: "/openapi.json"}, status: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				var doc struct {
					Paths map[string]map[string]struct {
						Responses map[string]struct {
							Description string
							Content     map[string]struct {
								Schema  map[string]any
								Example map[string]any
							}
						}
					}
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
					t.Fatal(err)
				}
				r400 := doc.Paths["/lookup/{ip}"]["get"].Responses["400"]
				media := r400.Content["application/json"]
				if r400.Description != "Not an address" || media.Example["error"] != true {
					t.Errorf("400 = %+v", r400)
				}
				// The path parameter makes the library's own 400 possible too: either shape.
				if s, _ := json.Marshal(media.Schema); !strings.Contains(string(s), `"oneOf"`) || !strings.Contains(string(s), "ErrorResponse") || !strings.Contains(string(s), `"reason"`) && !strings.Contains(string(s), "ipError") {
					t.Errorf("400 schema = %s", s)
				}
				if r404 := doc.Paths["/items/{id}"]["get"].Responses["400"]; !strings.Contains(fmt.Sprint(r404.Content["application/json"].Schema), "ErrorResponse") {
					t.Errorf("other operations keep the standard error schema: %+v", r404)
				}
			}},
		{name: "plain error is a 500 hidden in production", env: prod, req: request{method: "GET", path: "/fail?kind=plain"}, status: 500,
			body: []string{`"message":"Internal Server Error"`}, notBody: []string{"hunter2"}},
		{name: "plain error text is shown in development", req: request{method: "GET", path: "/fail?kind=plain"}, status: 500, body: []string{"hunter2"}},
		{name: "panic is a 500 with the standard body", env: prod, req: request{method: "GET", path: "/fail?kind=panic"}, status: 500,
			body: []string{`"statusCode":500`}, notBody: []string{"boom"}},
		{name: "invalid response is 500 with details in development", req: request{method: "GET", path: "/fail?kind=badresponse"}, status: 500,
			body: []string{"Response validation failed", `"field":"response.name"`}},
		{name: "invalid response hides details in production", env: prod, req: request{method: "GET", path: "/fail?kind=badresponse"}, status: 500,
			body: []string{"Response validation failed"}, notBody: []string{"details"}},
		{name: "unknown route is 404 with the standard body", req: request{method: "GET", path: "/nope"}, status: 404,
			body: []string{`"error":"Not Found"`, `Route GET /nope not found`}},
		{name: "wrong method is 405 with Allow", req: request{method: "PATCH", path: "/items"}, status: 405,
			header: map[string]string{"Allow": "GET, HEAD, POST"}},
		{name: "HEAD is answered on GET endpoints", req: request{method: "HEAD", path: "/items/7"}, status: 200},
		{name: "NoBody answers 204", req: request{method: "DELETE", path: "/items/3", header: auth}, status: 204,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if rec.Body.Len() != 0 {
					t.Errorf("204 with a body: %q", rec.Body)
				}
			}},
		// Authentication.
		{name: "missing token is 401 with WWW-Authenticate", req: request{method: "POST", path: "/items", body: `{"name":"a"}`, header: withJSON(nil)}, status: 401,
			body: []string{"Missing authorization header"}, header: map[string]string{"Www-Authenticate": "Bearer"}},
		{name: "malformed header is 401", req: request{method: "POST", path: "/items", body: `{}`, header: withJSON(map[string]string{"Authorization": "Token abc"})}, status: 401,
			body: []string{"Expected: Bearer <token>"}},
		{name: "wrong token is 403", req: request{method: "POST", path: "/items", body: `{"name":"a"}`, header: withJSON(map[string]string{"Authorization": "Bearer wrong"})}, status: 403,
			body: []string{`{"statusCode":403,"error":"Forbidden","message":"Invalid token"}`}},
		{name: "scheme is case-insensitive", req: request{method: "POST", path: "/items", body: `{"name":"a"}`, header: withJSON(map[string]string{"Authorization": "bearer " + token})}, status: 201},
		{name: "auth runs before validation", req: request{method: "POST", path: "/items", body: `{"bad":true}`, header: withJSON(nil)}, status: 401, notBody: []string{"details"}},
		{name: "no token configured refuses everything", cfg: func(c *apiserver.Config[user]) { c.APIToken = "" },
			req: request{method: "DELETE", path: "/items/1", header: map[string]string{"Authorization": "Bearer "}}, status: 401},
		{name: "validator context reaches the handler", cfg: validator, req: request{method: "GET", path: "/me", header: map[string]string{"Authorization": "Bearer alice"}}, status: 200,
			body: []string{`{"name":"alice","admin":true}`}},
		{name: "validator refusal is 403 with its error", cfg: validator, req: request{method: "GET", path: "/me", header: map[string]string{"Authorization": "Bearer bob"}}, status: 403,
			body: []string{`"message":"Token revoked"`}},
		{name: "validator error is answered as is", cfg: validator, req: request{method: "GET", path: "/me", header: map[string]string{"Authorization": "Bearer storedown"}}, status: 503,
			body: []string{"User store unavailable"}, header: map[string]string{"Retry-After": "1"}},
		{name: "role check in the handler is 403", cfg: validator, req: request{method: "GET", path: "/me", header: map[string]string{"Authorization": "Bearer guest"}}, status: 403,
			body: []string{"Admins only"}},
		{name: "AuthenticateToken protects a gin group", req: request{method: "GET", path: "/raw/hello"}, status: 401},
		{name: "AuthenticateToken lets a good token through", req: request{method: "GET", path: "/raw/hello", header: auth}, status: 200, body: []string{"hello"}},
		// Request ids.
		{name: "a sane X-Request-ID is echoed", req: request{method: "GET", path: "/items", header: map[string]string{"X-Request-ID": "abc-123"}}, status: 200,
			header: map[string]string{"X-Request-Id": "abc-123"}},
		{name: "an insane X-Request-ID is replaced", req: request{method: "GET", path: "/items", header: map[string]string{"X-Request-ID": "<script>"}}, status: 200,
			check: func(t *testing.T, rec *httptest.ResponseRecorder) {
				if id := rec.Header().Get("X-Request-Id"); id == "" || id == "<script>" {
					t.Errorf("X-Request-ID = %q", id)
				}
			}},
		// Health, metrics, docs.
		{name: "healthz answers", req: request{method: "GET", path: "/healthz"}, status: 200, body: []string{`"status":"ok"`}},
		{name: "readyz answers when checks pass", req: request{method: "GET", path: "/readyz"}, status: 200, body: []string{`"ready"`}},
		{name: "metrics are served with route templates", before: []request{{method: "GET", path: "/items/5"}, {method: "GET", path: "/random-scan"}},
			req: request{method: "GET", path: "/metrics"}, status: 200,
			body:    []string{`http_requests_total{code="200",method="GET",route="/items/:id"} 1`, `route="unmatched"`, "go_goroutines", "process_", "http_request_duration_seconds_bucket", "http_requests_in_flight"},
			notBody: []string{"random-scan"}},
		{name: "METRICS_ENABLED=false removes /metrics", env: map[string]string{"METRICS_ENABLED": "false"}, req: request{method: "GET", path: "/metrics"}, status: 404},
		{name: "openapi.json is served", req: request{method: "GET", path: "/openapi.json"}, status: 200, body: []string{`"openapi":"3.1.0"`, `"title":"Fixture"`, `"servers":[{"url":"/"}]`}},
		{name: "X-Forwarded-Prefix from a trusted proxy sets servers", env: map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8"},
			req: request{method: "GET", path: "/openapi.json", remote: "10.1.2.3:5555", header: map[string]string{"X-Forwarded-Prefix": "/geoip"}}, status: 200,
			body: []string{`"servers":[{"url":"/geoip/"}]`}},
		{name: "X-Forwarded-Prefix from anyone else is ignored",
			req: request{method: "GET", path: "/openapi.json", header: map[string]string{"X-Forwarded-Prefix": "/evil"}}, status: 200,
			body: []string{`"servers":[{"url":"/"}]`}},
		{name: "a trailing-slash redirect ignores an untrusted X-Forwarded-Prefix", req: request{method: "GET", path: "/items/", header: map[string]string{"X-Forwarded-Prefix": "/evil"}}, status: 301,
			header: map[string]string{"Location": "/items"}},
		{name: "a trailing-slash redirect keeps a trusted proxy's prefix", env: map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8"},
			req: request{method: "GET", path: "/items/", remote: "10.0.0.9:1", header: map[string]string{"X-Forwarded-Prefix": "/api"}}, status: 301,
			header: map[string]string{"Location": "/api/items"}},
		{name: "docs redirect is relative", req: request{method: "GET", path: "/docs"}, status: 302, header: map[string]string{"Location": "docs/index.html"}},
		{name: "docs page is Swagger UI", req: request{method: "GET", path: "/docs/index.html"}, status: 200, body: []string{"swagger-ui"}},
		{name: "docs point at the runtime spec", req: request{method: "GET", path: "/docs/swagger-initializer.js"}, status: 200, body: []string{`url: "../openapi.json"`}},
		{name: "docs assets are Swagger UI 5", req: request{method: "GET", path: "/docs/swagger-ui-bundle.js"}, status: 200, body: []string{"5.18"}},
		// CORS.
		{name: "CORS * by default", req: request{method: "GET", path: "/items", header: map[string]string{"Origin": "https://a.example"}}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": ""}},
		{name: "CORS explicit origin is echoed with credentials", env: map[string]string{"CORS_ORIGIN": "https://a.example, https://b.example"},
			req: request{method: "GET", path: "/items", header: map[string]string{"Origin": "https://b.example"}}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": "https://b.example", "Access-Control-Allow-Credentials": "true"}},
		{name: "CORS other origins get no grant", env: map[string]string{"CORS_ORIGIN": "https://a.example"},
			req: request{method: "GET", path: "/items", header: map[string]string{"Origin": "https://evil.example"}}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "CORS preflight is answered", req: request{method: "OPTIONS", path: "/items", header: map[string]string{"Origin": "https://a.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}}, status: 204,
			header: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "authorization, content-type"}},
		// Rate limiting (memory store; the Redis store has its own tests).
		{name: "rate limit headers on limited routes", req: request{method: "GET", path: "/items"}, status: 200,
			header: map[string]string{"Ratelimit-Limit": "100", "Ratelimit-Remaining": "99"}},
		{name: "global limit answers 429 with Retry-After", env: map[string]string{"RATE_LIMIT_MAX": "2", "RATE_LIMIT_WINDOW": "1m"},
			before: []request{{method: "GET", path: "/items"}, {method: "GET", path: "/items/1"}},
			req:    request{method: "GET", path: "/items"}, status: 429,
			body:   []string{`{"statusCode":429,"error":"Too Many Requests","message":"Rate limit exceeded, retry in 30 seconds"}`},
			header: map[string]string{"Retry-After": "30", "Ratelimit-Limit": "2", "Ratelimit-Remaining": "0"}},
		{name: "forged X-Forwarded-For does not escape the limit", env: map[string]string{"RATE_LIMIT_MAX": "1"},
			before: []request{{method: "GET", path: "/items", header: map[string]string{"X-Forwarded-For": "1.1.1.1"}}},
			req:    request{method: "GET", path: "/items", header: map[string]string{"X-Forwarded-For": "2.2.2.2"}}, status: 429},
		{name: "forged X-Forwarded-For cannot claim the allow list", env: map[string]string{"RATE_LIMIT_MAX": "1", "RATE_LIMIT_ALLOW": "127.0.0.1"},
			before: []request{{method: "GET", path: "/items", header: map[string]string{"X-Forwarded-For": "127.0.0.1"}}},
			req:    request{method: "GET", path: "/items", header: map[string]string{"X-Forwarded-For": "127.0.0.1"}}, status: 429},
		{name: "clients behind a trusted proxy are told apart", env: map[string]string{"RATE_LIMIT_MAX": "1", "TRUSTED_PROXIES": "10.0.0.1"},
			before: []request{{method: "GET", path: "/items", remote: "10.0.0.1:999", header: map[string]string{"X-Forwarded-For": "203.0.113.1"}}},
			req:    request{method: "GET", path: "/items", remote: "10.0.0.1:999", header: map[string]string{"X-Forwarded-For": "203.0.113.2"}}, status: 200},
		{name: "allow list bypasses the limit without headers", env: map[string]string{"RATE_LIMIT_MAX": "1", "RATE_LIMIT_ALLOW": "192.0.2.0/24"},
			before: []request{{method: "GET", path: "/items"}},
			req:    request{method: "GET", path: "/items"}, status: 200, header: map[string]string{"Ratelimit-Limit": ""}},
		{name: "per-endpoint limit has its own counter", env: map[string]string{"RATE_LIMIT_MAX": "1"},
			before: []request{{method: "GET", path: "/items"}, {method: "GET", path: "/limited"}},
			req:    request{method: "GET", path: "/limited"}, status: 200, header: map[string]string{"Ratelimit-Limit": "2", "Ratelimit-Remaining": "0"}},
		{name: "per-endpoint limit answers 429", before: []request{{method: "GET", path: "/limited"}, {method: "GET", path: "/limited"}},
			req: request{method: "GET", path: "/limited"}, status: 429},
		{name: "rateLimit false is never limited", env: map[string]string{"RATE_LIMIT_MAX": "1"},
			before: []request{{method: "GET", path: "/unlimited"}, {method: "GET", path: "/unlimited"}},
			req:    request{method: "GET", path: "/unlimited"}, status: 200, header: map[string]string{"Ratelimit-Limit": ""}},
		{name: "health and metrics are not limited", env: map[string]string{"RATE_LIMIT_MAX": "1"},
			before: []request{{method: "GET", path: "/healthz"}, {method: "GET", path: "/metrics"}, {method: "GET", path: "/readyz"}},
			req:    request{method: "GET", path: "/healthz"}, status: 200, header: map[string]string{"Ratelimit-Limit": ""}},
		{name: "rejections are counted", env: map[string]string{"RATE_LIMIT_MAX": "1"},
			before: []request{{method: "GET", path: "/items"}, {method: "GET", path: "/items"}},
			req:    request{method: "GET", path: "/metrics"}, status: 200, body: []string{`ratelimit_rejections_total{route="/items"} 1`}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			s := newFixture(t, r.env, r.cfg)
			for _, b := range r.before {
				send(s, b)
			}
			rec := send(s, r.req)
			if rec.Code != r.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, r.status, rec.Body)
			}
			for _, want := range r.body {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("body lacks %q:\n%s", want, rec.Body)
				}
			}
			for _, bad := range r.notBody {
				if strings.Contains(rec.Body.String(), bad) {
					t.Errorf("body contains %q:\n%s", bad, rec.Body)
				}
			}
			for k, v := range r.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if ct := rec.Header().Get("Content-Type"); rec.Code >= 400 && ct != "application/json; charset=utf-8" {
				t.Errorf("error Content-Type = %q", ct)
			}
			if r.check != nil {
				r.check(t, rec)
			}
		})
	}
}

func send(s *apiserver.Server[user], r request) *httptest.ResponseRecorder {
	var body *strings.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	var req *http.Request
	if body != nil {
		req = httptest.NewRequest(r.method, r.path, body)
	} else {
		req = httptest.NewRequest(r.method, r.path, nil)
	}
	req.RemoteAddr = "192.0.2.1:1234"
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}
