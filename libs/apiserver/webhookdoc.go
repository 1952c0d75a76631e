package apiserver

import (
	"fmt"
	"reflect"
)

// WebhookDoc documents a request the service sends to others (an OpenAPI
// 3.1 `webhooks` entry): Body is a value of the payload's type, whose
// schema is derived as an endpoint's body is.
type WebhookDoc struct {
	// Name is the entry's key, e.g. the event type "message.created".
	Name        string
	Summary     string
	Description string
	Tags        []string
	Body        any
}

// DocumentWebhook adds w to the document's webhooks; a name given twice
// is an error.
func (s *Server[A]) DocumentWebhook(w WebhookDoc) error {
	if w.Name == "" || w.Body == nil {
		return fmt.Errorf("apiserver: a webhook needs a name and a body")
	}
	n, err := s.schemas.Type(reflect.TypeOf(w.Body))
	if err != nil {
		return fmt.Errorf("apiserver: webhook %s: %w", w.Name, err)
	}
	op := map[string]any{
		"operationId": "webhook-" + nonWord.ReplaceAllString(w.Name, "-"),
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": n.Schema}}},
		"responses":   map[string]any{"2XX": map[string]any{"description": "Received: any 2xx answer ends the delivery"}},
	}
	if w.Summary != "" {
		op["summary"] = w.Summary
	}
	if w.Description != "" {
		op["description"] = w.Description
	}
	if len(w.Tags) > 0 {
		op["tags"] = w.Tags
	}
	return s.docs.addWebhook(w.Name, op)
}

func (d *openAPI) addWebhook(name string, op map[string]any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.webhooks == nil {
		d.webhooks = map[string]any{}
	}
	if _, dup := d.webhooks[name]; dup {
		return fmt.Errorf("apiserver: webhook %s documented twice", name)
	}
	d.webhooks[name] = map[string]any{"post": op}
	d.encoded = map[string][]byte{}
	return nil
}
