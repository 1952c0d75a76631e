package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSendBodiesAreUTF8: chat's bodies go through the library's decoding, so a message
// declared in another charset is refused (415) and one with bytes that are not UTF-8 is
// refused naming the field (400), instead of being stored with U+FFFD in place of them.
func TestSendBodiesAreUTF8(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	post := func(contentType, body string) resp {
		t.Helper()
		req, err := http.NewRequest("POST", s.URL+"/api/v1/messages/send", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		res, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	}
	for _, ct := range []string{"application/json; charset=utf-16", "application/json; charset=iso-8859-1"} {
		r := post(ct, `{"message":"hello"}`)
		if msg, _ := errorBody(t, r, http.StatusUnsupportedMediaType)["message"].(string); !strings.Contains(msg, "JSON is UTF-8") {
			t.Errorf("%s: %s", ct, r)
		}
	}
	r := post("application/json", "{\"message\":\"caf\xe9\"}") // Latin-1 é
	body := errorBody(t, r, http.StatusBadRequest)
	if !strings.Contains(r.String(), `"field":"body.message"`) || !strings.Contains(body["message"].(string), "not valid UTF-8") {
		t.Errorf("invalid UTF-8: %s", r)
	}
	if got := s.messages(""); len(got) != 0 {
		t.Errorf("a refused body was stored: %+v", got)
	}
	s.must(201, "POST", "/api/v1/messages/send", adminToken, map[string]any{"message": "café"}, nil)
}
