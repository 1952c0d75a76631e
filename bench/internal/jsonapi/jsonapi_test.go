package jsonapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ N int }
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Content-Type") != "application/json" ||
			json.NewDecoder(r.Body).Decode(&in) != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"reason":"bad"}`))
			return
		}
		switch in.N {
		case 1:
			_, _ = w.Write([]byte(`{"n":2}`))
		case 2:
			_, _ = w.Write([]byte(`not json`))
		default:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(strings.Repeat("x", 2<<20)))
		}
	}))
	defer srv.Close()
	ctx, c := context.Background(), srv.Client()
	var out struct{ N int }
	if st, refused, err := Call(ctx, c, "POST", srv.URL, "tok", map[string]int{"n": 1}, &out); st != 200 || refused != nil || err != nil || out.N != 2 {
		t.Fatalf("ok: %d %q %v %+v", st, refused, err, out)
	}
	if st, refused, err := Call(ctx, c, "POST", srv.URL, "", map[string]int{"n": 1}, nil); st != 400 || string(refused) != `{"reason":"bad"}` || err != nil {
		t.Fatalf("no token: %d %q %v", st, refused, err)
	}
	if _, _, err := Call(ctx, c, "POST", srv.URL, "tok", map[string]int{"n": 2}, &out); err == nil {
		t.Fatal("an undecodable 2xx answer read")
	}
	if st, refused, err := Call(ctx, c, "POST", srv.URL, "tok", map[string]int{"n": 3}, nil); st != 403 || len(refused) != maxAnswer || err != nil {
		t.Fatalf("a large refusal: %d, %d bytes, %v", st, len(refused), err)
	}
}
