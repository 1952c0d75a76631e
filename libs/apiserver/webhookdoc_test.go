package apiserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/apistack/platform/libs/apiserver"
)

type pinged struct {
	Type string `json:"type" enum:"item.pinged"`
	ID   string `json:"id" doc:"The item"`
}

// TestDocumentWebhookIsOpenAPIWebhooks: a documented webhook is a valid
// OpenAPI 3.1 `webhooks` entry whose request body is the payload's schema,
// and a name documented twice is refused.
func TestDocumentWebhookIsOpenAPIWebhooks(t *testing.T) {
	s := newFixture(t, nil, nil)
	if err := s.DocumentWebhook(apiserver.WebhookDoc{Name: "item.pinged", Summary: "An item was pinged", Body: pinged{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DocumentWebhook(apiserver.WebhookDoc{Name: "item.pinged", Body: pinged{}}); err == nil {
		t.Fatal("a webhook documented twice was accepted")
	}
	rec := send(s, request{method: "GET", path: "/openapi.json"})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", rec.Code)
	}
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("not valid OpenAPI 3.1: %v", err)
	}
	w := doc.Webhooks["item.pinged"]
	if w == nil || w.Post == nil || w.Post.Summary != "An item was pinged" {
		t.Fatalf("webhooks[item.pinged] = %+v", w)
	}
	body := w.Post.RequestBody.Value.Content.Get("application/json")
	if body == nil || body.Schema == nil {
		t.Fatal("no JSON body schema")
	}
	sch := body.Schema.Value
	if sch == nil && body.Schema.Ref != "" {
		sch = doc.Components.Schemas[body.Schema.Ref[len("#/components/schemas/"):]].Value
	}
	if sch == nil || sch.Properties["id"] == nil || sch.Properties["type"] == nil {
		t.Fatalf("the body schema lacks the payload's fields: %+v", body.Schema)
	}
}
