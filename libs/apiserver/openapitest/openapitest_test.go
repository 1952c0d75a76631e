package openapitest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/openapitest"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

type thing struct {
	ID   string `json:"id" example:"1"`
	Size int    `json:"size" minimum:"0" example:"3"`
}

type thingIn struct {
	ID string `path:"id" pattern:"^[0-9]+$" example:"7"`
}

type thingHeaders struct {
	ETag string `header:"ETag" required:"true"`
}

type badExample struct {
	Size int `json:"size" minimum:"10" example:"3"`
}

// server answers as told by the query: ?lie=status|header|body answers
// something the document does not say.
func server(t *testing.T) http.Handler {
	t.Helper()
	off := false // the library's own checks would catch the header lie first
	s, err := apiserver.New(apiserver.Config[struct{}]{Getenv: func(string) string { return "" }, Logger: testkit.Logger(), ValidateResponses: &off})
	if err != nil {
		t.Fatal(err)
	}
	type answer = apiserver.Response[thingHeaders, thing]
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/things/:id"},
		func(c *apiserver.Context[struct{}], in *thingIn) (answer, error) {
			switch c.Query("lie") {
			case "status":
				c.JSON(http.StatusTeapot, map[string]any{"id": in.ID})
				return answer{}, nil
			case "body":
				c.Header("ETag", `"1"`)
				c.JSON(http.StatusOK, map[string]any{"id": in.ID, "size": -1})
				return answer{}, nil
			case "header":
				return answer{Body: thing{ID: in.ID}}, nil
			}
			return answer{Header: thingHeaders{ETag: `"1"`}, Body: thing{ID: in.ID, Size: 1}}, nil
		})
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/bad", RateLimit: apiserver.NoRateLimit},
		func(c *apiserver.Context[struct{}], in *struct{}) (badExample, error) {
			return badExample{Size: 10}, nil
		})
	return s.Handler()
}

func TestCheckFindsEachKindOfLie(t *testing.T) {
	h := server(t)
	v, err := openapitest.FromHandler(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ target, want string }{
		{"/things/1", ""},
		{"/things/x", ""}, // 400, documented
		{"/things/1?lie=status", "status 418 is not documented"},
		{"/things/1?lie=header", `"ETag"`},
		{"/things/1?lie=body", "size"},
		{"/healthz", ""}, // not an operation: not checked
	} {
		req := httptest.NewRequest(http.MethodGet, c.target, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		err := v.Check(req, rec.Code, rec.Header(), rec.Body.Bytes())
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.target, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one naming %s", c.target, err, c.want)
		}
	}
	// 405 is checked against components.responses.MethodNotAllowed.
	req := httptest.NewRequest(http.MethodPost, "/things/1", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if err := v.Check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil || rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("405: %d %v", rec.Code, err)
	}
	rec.Header().Del("Allow")
	if err := v.Check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err == nil || !strings.Contains(err.Error(), "Allow") {
		t.Errorf("405 without Allow passed: %v", err)
	}
	// A redirect outside the document (the library's /docs) must carry a Location.
	req = httptest.NewRequest(http.MethodGet, "/docs", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if err := v.Check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil || rec.Code != http.StatusFound {
		t.Errorf("/docs: %d %v", rec.Code, err)
	}
	rec.Header().Del("Location")
	if err := v.Check(req, rec.Code, rec.Header(), rec.Body.Bytes()); err == nil || !strings.Contains(err.Error(), "Location") {
		t.Errorf("a redirect without Location passed: %v", err)
	}
	if v.Checked() < 6 {
		t.Errorf("checked %d answers", v.Checked())
	}
}

func TestExampleErrorsFindsABadExample(t *testing.T) {
	v, err := openapitest.FromHandler(server(t))
	if err != nil {
		t.Fatal(err)
	}
	checked, errs := openapitest.ExampleErrors(v.Doc())
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "GET /bad 200 application/json.size") {
		t.Fatalf("errors = %v, want one for the size of GET /bad", errs)
	}
	if checked < 4 {
		t.Errorf("checked %d examples, want the path parameter's, thing's two and badExample's", checked)
	}
}
