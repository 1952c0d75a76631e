// The items example's main operations through a client oapi-codegen
// generates from its served document: TestGeneratedClient in items_test.go
// copies this file into a temporary module beside that client and runs it
// against a live server.
package genclient

import (
	"context"
	"net/http"
	"os"
	"testing"

	"genclient/apiclient"
)

func TestItemsThroughGeneratedClient(t *testing.T) {
	c, err := apiclient.NewClientWithResponses(os.Getenv("API_URL"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	authed := apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+os.Getenv("API_TOKEN"))
		return nil
	})
	ac, err := apiclient.NewClientWithResponses(os.Getenv("API_URL"), authed)
	if err != nil {
		t.Fatal(err)
	}

	price := 2.5
	created, err := ac.PostItemsWithResponse(ctx, apiclient.ItemBody{Name: "Widget", Price: &price})
	if err != nil || created.JSON201 == nil || created.JSON201.Name != "Widget" || created.JSON201.Price != 2.5 {
		t.Fatalf("POST /items: %v %d %s", err, created.StatusCode(), created.Body)
	}
	unauth, err := c.PostItemsWithResponse(ctx, apiclient.ItemBody{Name: "x"})
	if err != nil || unauth.JSON401 == nil || unauth.JSON401.Message == "" {
		t.Fatalf("POST /items without a token: %v %d %s", err, unauth.StatusCode(), unauth.Body)
	}
	one, err := c.GetItemsIdWithResponse(ctx, created.JSON201.Id)
	if err != nil || one.JSON200 == nil || one.JSON200.Id != created.JSON201.Id {
		t.Fatalf("GET /items/{id}: %v %s", err, one.Body)
	}
	limit := int64(10)
	list, err := c.GetItemsWithResponse(ctx, &apiclient.GetItemsParams{Limit: &limit})
	if err != nil || list.JSON200 == nil || list.JSON200.Total != 1 || len(list.JSON200.Items) != 1 {
		t.Fatalf("GET /items: %v %s", err, list.Body)
	}
	zero := int64(0)
	bad, err := c.GetItemsWithResponse(ctx, &apiclient.GetItemsParams{Limit: &zero})
	if err != nil || bad.JSON400 == nil || bad.JSON400.Details == nil {
		t.Fatalf("GET /items?limit=0: %v %d %s", err, bad.StatusCode(), bad.Body)
	}
	put, err := ac.PutItemsIdWithResponse(ctx, created.JSON201.Id, apiclient.ItemBody{Name: "Gadget"})
	if err != nil || put.JSON200 == nil || put.JSON200.Name != "Gadget" {
		t.Fatalf("PUT /items/{id}: %v %s", err, put.Body)
	}
	del, err := ac.DeleteItemsIdWithResponse(ctx, created.JSON201.Id)
	if err != nil || del.StatusCode() != http.StatusNoContent {
		t.Fatalf("DELETE /items/{id}: %v %d %s", err, del.StatusCode(), del.Body)
	}
	gone, err := c.GetItemsIdWithResponse(ctx, created.JSON201.Id)
	if err != nil || gone.JSON404 == nil {
		t.Fatalf("GET a deleted item: %v %d %s", err, gone.StatusCode(), gone.Body)
	}
}
