package apiserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/testkit"
)

// quietServer is a server with the default configuration, an empty environment and no
// logs, for the endpoints a test registers.
func quietServer(t *testing.T) *apiserver.Server[struct{}] {
	t.Helper()
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" },
		Logger: testkit.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type sizeIn struct {
	N int `query:"n" minimum:"0" maximum:"100000"`
}

type sizeOut struct {
	Text string `json:"text"`
}

// TestResponsesCarryContentLength: net/http sets Content-Length itself only
// for bodies that fit its 2 KiB buffer and would chunk larger ones; the
// library sets it for those, so every JSON answer has a length.
func TestResponsesCarryContentLength(t *testing.T) {
	s := quietServer(t)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/text"},
		func(_ *apiserver.Context[struct{}], in *sizeIn) (sizeOut, error) {
			return sizeOut{Text: strings.Repeat("x", in.N)}, nil
		})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, n := range []int{10, 2030, 2040, 5000, 100000} {
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, ts.URL+"/text?n="+strconv.Itoa(n), nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			want := int64(len(`{"text":""}`) + n)
			if res.StatusCode != 200 || res.ContentLength != want || len(res.TransferEncoding) > 0 {
				t.Errorf("%s n=%d: status %d, Content-Length %d (want %d), Transfer-Encoding %v",
					method, n, res.StatusCode, res.ContentLength, want, res.TransferEncoding)
			}
			if method == "GET" && int64(len(body)) != want {
				t.Errorf("GET n=%d: %d body bytes, want %d", n, len(body), want)
			}
		}
	}
}

type outHeaders struct {
	ETag     string `header:"ETag" required:"true" status:"200,304" doc:"Version"`
	Location string `header:"Location" status:"201"`
}

type outIn struct {
	Mode string `query:"mode"`
}

// TestResponseCarriesHeadersStatusAndRawBodies: a handler's Response is written by the
// library (headers, status, an encoded body or raw bytes), a conditional GET is answered
// 304 with the headers, and what the operation does not document (a status, a media type,
// a missing required header, a raw JSON body that breaks the schema) is a 500.
func TestResponseCarriesHeadersStatusAndRawBodies(t *testing.T) {
	s := newFixture(t, nil, nil)
	type resp = apiserver.Response[outHeaders, item]
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/out", Responses: map[int]apiserver.ResponseDoc{
		200: {Content: map[string]apiserver.Body{"application/json": {}, "application/yaml": {}}},
		201: {Description: "Created"}}},
		func(c *apiserver.Context[user], in *outIn) (resp, error) {
			r := resp{Header: outHeaders{ETag: `"v1"`}, Body: item{ID: "1", Name: "n"}}
			switch in.Mode {
			case "raw":
				r.Raw = []byte(`{"id":"2","name":"raw","price":1}`)
			case "yaml":
				r.Raw, r.ContentType = []byte("id: \"3\"\nname: \"y\"\n"), "application/yaml; charset=utf-8"
			case "created":
				r.Status, r.Header.Location = 201, "/out/1"
			case "teapot":
				r.Status = 418
			case "html":
				r.Raw, r.ContentType = []byte("<b>"), "text/html"
			case "noetag":
				r.Header.ETag = ""
			case "badraw":
				r.Raw = []byte(`{"id":"2","name":"","price":1}`)
			}
			return r, nil
		})
	cases := []struct {
		mode, inm    string
		status       int
		body, ct     string
		etag, locHdr string
	}{
		{mode: "", status: 200, body: `{"id":"1","name":"n","price":0}`, ct: "application/json; charset=utf-8", etag: `"v1"`},
		{mode: "raw", status: 200, body: `{"id":"2","name":"raw","price":1}`, ct: "application/json; charset=utf-8", etag: `"v1"`},
		{mode: "yaml", status: 200, body: "id: \"3\"\nname: \"y\"\n", ct: "application/yaml; charset=utf-8", etag: `"v1"`},
		{mode: "created", status: 201, body: `{"id":"1","name":"n","price":0}`, ct: "application/json; charset=utf-8", locHdr: "/out/1"},
		{mode: "", inm: `W/"v1"`, status: 304, etag: `"v1"`},
		{mode: "raw", inm: `"v0", "v1"`, status: 304, etag: `"v1"`},
		{mode: "", inm: "*", status: 304, etag: `"v1"`},
		{mode: "", inm: `"v0"`, status: 200, body: `{"id":"1","name":"n","price":0}`, ct: "application/json; charset=utf-8", etag: `"v1"`},
		{mode: "teapot", status: 500},
		{mode: "html", status: 500},
		{mode: "noetag", status: 500},
		{mode: "badraw", status: 500},
	}
	for _, tc := range cases {
		h := map[string]string{}
		if tc.inm != "" {
			h["If-None-Match"] = tc.inm
		}
		rec := send(s, request{method: "GET", path: "/out?mode=" + tc.mode, header: h})
		if rec.Code != tc.status {
			t.Errorf("mode %q If-None-Match %q: status %d, want %d (%s)", tc.mode, tc.inm, rec.Code, tc.status, rec.Body)
			continue
		}
		if tc.status == 500 {
			continue
		}
		if rec.Body.String() != tc.body || rec.Header().Get("Content-Type") != tc.ct && tc.body != "" {
			t.Errorf("mode %q: body %q type %q, want %q %q", tc.mode, rec.Body, rec.Header().Get("Content-Type"), tc.body, tc.ct)
		}
		if rec.Header().Get("ETag") != tc.etag || rec.Header().Get("Location") != tc.locHdr {
			t.Errorf("mode %q: ETag %q Location %q, want %q %q", tc.mode, rec.Header().Get("ETag"), rec.Header().Get("Location"), tc.etag, tc.locHdr)
		}
	}
	doc := loadDoc(t, s)
	op := doc.Paths.Find("/out").Get
	if op.Parameters.GetByInAndName("header", "If-None-Match") == nil {
		t.Error("If-None-Match not documented for an operation whose answer carries an ETag")
	}
	if r := op.Responses.Status(304); r == nil || r.Value.Headers["ETag"] == nil {
		t.Error("304 with its ETag not documented")
	}
	if r := op.Responses.Status(201); r == nil || r.Value.Headers["Location"] == nil {
		t.Error("Location not documented on 201")
	}
	// Another 2xx answers with the success body: documented with its schema.
	if r := op.Responses.Status(201); r == nil || r.Value.Content.Get("application/json") == nil {
		t.Error("201 beside 200 documented without the success body")
	}
	if r := op.Responses.Status(304); r == nil || len(r.Value.Content) != 0 {
		t.Error("304 documented with a body")
	}
}

// manyHeaders has more values than the room the library keeps for them in each request's
// one allocation (four): the rest still reach the answer, each with its own value.
type manyHeaders struct {
	A string `header:"X-A"`
	B string `header:"X-B"`
	C string `header:"X-C"`
	D string `header:"X-D"`
	E string `header:"X-E"`
	F int    `header:"X-F"`
}

func TestResponseCarriesMoreHeadersThanItsRoom(t *testing.T) {
	s := quietServer(t)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/many"},
		func(c *apiserver.Context[struct{}], _ *struct{}) (apiserver.Response[manyHeaders, sizeOut], error) {
			return apiserver.Response[manyHeaders, sizeOut]{Header: manyHeaders{"a", "b", "", "d", "e", 6}, Body: sizeOut{Text: "x"}}, nil
		})
	for range 2 { // the second request must not see the first one's values
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/many", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		for name, want := range map[string]string{"X-A": "a", "X-B": "b", "X-C": "", "X-D": "d", "X-E": "e", "X-F": "6"} {
			if got := rec.Header().Values(name); (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
	}
}

// TestRawJSONOnlyWhereDocumented: a raw JSON answer (the default media type) is sent by an
// operation that documents JSON, and refused (500) by one that documents only text.
func TestRawJSONOnlyWhereDocumented(t *testing.T) {
	s := quietServer(t)
	handler := func(_ *apiserver.Context[struct{}], _ *struct{}) (apiserver.Response[struct{}, sizeOut], error) {
		return apiserver.Response[struct{}, sizeOut]{Raw: []byte(`{"text":""}`)}, nil
	}
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/json"}, handler)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/text",
		Responses: map[int]apiserver.ResponseDoc{200: {Content: map[string]apiserver.Body{"text/plain": {Kind: apiserver.BodyText}}}}}, handler)
	for path, want := range map[string]int{"/json": 200, "/text": 500} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: status %d, want %d (%s)", path, rec.Code, want, rec.Body)
		}
	}
}

// intHeaders packs int and uint header fields beside 4-byte neighbours: an
// int read as 8 bytes on a 32-bit target (GOARCH=386) takes its neighbour's
// bytes with it and sends a wrong number.
type intHeaders struct {
	A int    `header:"X-A"`
	B int32  `header:"X-B"`
	C uint   `header:"X-C"`
	D uint32 `header:"X-D"`
}

// TestIntHeadersAtTheirOwnSize: run with GOARCH=386 too (see the README).
func TestIntHeadersAtTheirOwnSize(t *testing.T) {
	s := quietServer(t)
	apiserver.Register(s, apiserver.Operation{Method: "GET", URL: "/ints"},
		func(c *apiserver.Context[struct{}], in *struct{}) (apiserver.Response[intHeaders, item], error) {
			return apiserver.Response[intHeaders, item]{Header: intHeaders{A: -7, B: 9, C: 11, D: 13}, Body: item{ID: "1", Name: "n"}}, nil
		})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/ints", nil))
	for h, want := range map[string]string{"X-A": "-7", "X-B": "9", "X-C": "11", "X-D": "13"} {
		if got := rec.Header().Get(h); got != want {
			t.Errorf("%s: %q, want %q (%d %s)", h, got, want, rec.Code, rec.Body)
		}
	}
}
