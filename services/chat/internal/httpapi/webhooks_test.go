package httpapi_test

import (
	"testing"

	"github.com/apistack/platform/services/chat/internal/webhooks"
)

// TestOpenAPIDocumentsEveryWebhookEvent: each event type is an OpenAPI 3.1
// `webhooks` entry whose body is its payload's schema.
func TestOpenAPIDocumentsEveryWebhookEvent(t *testing.T) {
	s := newStack(t, engine{name: "memory"}, stackOptions{})
	var doc struct {
		Webhooks map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"webhooks"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	s.must(200, "GET", "/openapi.json", "", nil, &doc)
	if len(doc.Webhooks) != len(webhooks.Types) {
		t.Errorf("%d webhooks documented, want %d", len(doc.Webhooks), len(webhooks.Types))
	}
	for _, ty := range webhooks.Types {
		w, ok := doc.Webhooks[string(ty)]
		if !ok {
			t.Errorf("%s is not documented", ty)
			continue
		}
		ref := w.Post.RequestBody.Content["application/json"].Schema.Ref
		want := "#/components/schemas/ModerationEvent"
		if ty == webhooks.MessageCreated || ty == webhooks.MessageDeleted {
			want = "#/components/schemas/MessageEvent"
		}
		if ref != want {
			t.Errorf("%s body %q, want %q", ty, ref, want)
		}
	}
	for _, name := range []string{"MessageEvent", "ModerationEvent", "MessageData", "ModerationData"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("schema %s missing", name)
		}
	}
}
