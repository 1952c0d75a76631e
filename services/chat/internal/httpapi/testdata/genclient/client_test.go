// chat's main operations through a client oapi-codegen generates from the
// served document: TestGeneratedClient in client_test.go copies this file
// into a temporary module beside that client and runs it against a live
// server (memory engine).
package genclient

import (
	"context"
	"net/http"
	"os"
	"testing"

	"genclient/apiclient"
)

func bearer(token string) apiclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}

// create a user, who they are, send (and replay), read, a channel, and an
// unauthenticated send.
func TestChatThroughGeneratedClient(t *testing.T) {
	c, err := apiclient.NewClientWithResponses(os.Getenv("API_URL"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	created, err := c.PostApiV1UsersWithResponse(ctx, apiclient.CreateUserBody{Name: "gen_client"}, bearer(os.Getenv("ADMIN_TOKEN")))
	if err != nil || created.JSON201 == nil || created.JSON201.Token == "" {
		t.Fatalf("POST /users: %v %d %s", err, created.StatusCode(), created.Body)
	}
	token := created.JSON201.Token
	me, err := c.GetApiV1UsersMeWithResponse(ctx, &apiclient.GetApiV1UsersMeParams{}, bearer(token))
	if err != nil || me.JSON200 == nil || me.JSON200.Name != "gen_client" {
		t.Fatalf("GET /users/me: %v %s", err, me.Body)
	}
	key := "gen-client-1"
	params := &apiclient.PostApiV1MessagesSendParams{IdempotencyKey: &key}
	sent, err := c.PostApiV1MessagesSendWithResponse(ctx, params, apiclient.SendBody{Message: "hello from a generated client"}, bearer(token))
	if err != nil || sent.JSON201 == nil || sent.JSON201.Text != "hello from a generated client" {
		t.Fatalf("POST /messages/send: %v %s", err, sent.Body)
	}
	again, err := c.PostApiV1MessagesSendWithResponse(ctx, params, apiclient.SendBody{Message: "hello from a generated client"}, bearer(token))
	if err != nil || again.JSON201 == nil || again.JSON201.Id != sent.JSON201.Id || again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("POST /messages/send again with its Idempotency-Key: %v %s", err, again.Body)
	}
	page, err := c.GetApiV1MessagesWithResponse(ctx, &apiclient.GetApiV1MessagesParams{Channel: &sent.JSON201.Channel})
	if err != nil || page.JSON200 == nil || len(page.JSON200.Messages) == 0 || page.JSON200.Messages[len(page.JSON200.Messages)-1].Id != sent.JSON201.Id {
		t.Fatalf("GET /messages: %v %s", err, page.Body)
	}
	ch, err := c.GetApiV1ChannelsChannelWithResponse(ctx, sent.JSON201.Channel)
	if err != nil || ch.JSON200 == nil {
		t.Fatalf("GET /channels/{channel}: %v %s", err, ch.Body)
	}
	unauth, err := c.PostApiV1MessagesSendWithResponse(ctx, nil, apiclient.SendBody{Message: "x"})
	if err != nil || unauth.JSON401 == nil || unauth.HTTPResponse.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("unauthenticated send: %v %d %s", err, unauth.StatusCode(), unauth.Body)
	}
}
