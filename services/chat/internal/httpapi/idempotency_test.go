package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestIdempotencyKey: POST /messages/send with an Idempotency-Key stores
// once; the repeat answers 201 with the first message and
// Idempotent-Replayed: true; the key with another message is 422, and a
// malformed key 400 naming the header.
func TestIdempotencyKey(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		s := newStack(t, e, stackOptions{})
		_, viewer := s.user(chat.RoleViewer)
		key := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }
		send := func(k, text string) resp {
			return s.callWith("POST", "/api/v1/messages/send", viewer, map[string]any{"message": text}, key(k))
		}
		first := send("order-42", "hello once")
		if first.Status != 201 || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first send: %s (replayed %q)", first, first.Header.Get("Idempotent-Replayed"))
		}
		again := send("order-42", "hello once")
		if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Raw) != string(first.Raw) {
			t.Fatalf("repeat: %s (replayed %q); want the first answer %s", again, again.Header.Get("Idempotent-Replayed"), first.Raw)
		}
		if n := len(s.messages("")); n != 1 {
			t.Fatalf("%d messages stored, want 1", n)
		}
		body := errorBody(t, send("order-42", "hello twice"), 422)
		if body["reason"] != chat.ReasonKeyReused {
			t.Fatalf("reused key: %v", body)
		}
		for _, bad := range []string{"has space", strings.Repeat("k", 65), "ключ"} {
			body := errorBody(t, send(bad, "x"), 400)
			details, _ := body["details"].([]any)
			if len(details) == 0 || !strings.Contains(details[0].(map[string]any)["field"].(string), "Idempotency-Key") {
				t.Fatalf("key %q: %v", bad, body)
			}
		}
		if n := len(s.messages("")); n != 1 {
			t.Fatalf("%d messages stored after refused sends, want 1", n)
		}
	})
}
