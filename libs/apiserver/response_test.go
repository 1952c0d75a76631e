package apiserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver"
)

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
	s, err := apiserver.New(apiserver.Config[struct{}]{
		Getenv: func(string) string { return "" },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
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
