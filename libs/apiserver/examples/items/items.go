// Command items-example is the seed's example shapes on libs/apiserver: a
// list with limit/offset, get/update/delete by :id and create with a JSON
// body, the mutating ones behind API_TOKEN.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apistack/platform/libs/apiserver"
)

// Item is one stored item.
type Item struct {
	ID        string    `json:"id" doc:"Item id" example:"1"`
	Name      string    `json:"name" minLength:"1" maxLength:"100" doc:"Display name" example:"Widget"`
	Price     float64   `json:"price" minimum:"0" doc:"Price in euros" example:"9.5"`
	Tags      []string  `json:"tags" maxItems:"10" doc:"Free-form labels"`
	CreatedAt time.Time `json:"created_at" doc:"When the item was created"`
}

// ListInput is the query of GET /items.
type ListInput struct {
	Limit  int `query:"limit" minimum:"1" maximum:"100" default:"10" doc:"How many items to return"`
	Offset int `query:"offset" minimum:"0" default:"0" doc:"How many items to skip"`
}

// ListOutput is the answer of GET /items.
type ListOutput struct {
	Items []Item `json:"items"`
	Total int    `json:"total" minimum:"0" doc:"Number of items in the store"`
}

// ItemID selects one item.
type ItemID struct {
	ID string `path:"id" pattern:"^[0-9]+$" doc:"Item id"`
}

// ItemBody is what POST and PUT accept.
type ItemBody struct {
	Name  string   `json:"name" minLength:"1" maxLength:"100" doc:"Display name" example:"Widget"`
	Price float64  `json:"price,omitempty" minimum:"0" default:"0" doc:"Price in euros"`
	Tags  []string `json:"tags,omitempty" maxItems:"10" doc:"Free-form labels"`
}

// CreateInput is the body of POST /items.
type CreateInput struct {
	Body ItemBody
}

// UpdateInput is PUT /items/:id.
type UpdateInput struct {
	ID   string `path:"id" pattern:"^[0-9]+$" doc:"Item id"`
	Body ItemBody
}

// Store keeps items in memory. items is copy-on-write: a write replaces
// the slice and never changes one a reader may still be encoding, so a list
// is answered from the slice itself, without a copy per request.
type Store struct {
	mu    sync.Mutex
	next  int
	items []Item
}

// NewServer builds the example server; main and the tests share it.
func NewServer(cfg apiserver.Config[struct{}]) (*apiserver.Server[struct{}], *Store, error) {
	if cfg.APITitle == "" {
		cfg.APITitle = "Items example"
	}
	cfg.APITags = append(cfg.APITags, apiserver.Tag{Name: "items", Description: "A small in-memory catalogue"})
	srv, err := apiserver.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	st := &Store{next: 1}
	Routes(srv, st)
	return srv, st, nil
}

// Routes declares the item endpoints on srv.
func Routes(srv *apiserver.Server[struct{}], st *Store) {
	apiserver.Register(srv, apiserver.Operation{
		Method: "GET", URL: "/items", Summary: "List items", Tags: []string{"items"},
		Description: "Items in creation order, paged with limit and offset.",
	}, func(c *apiserver.Context[struct{}], in *ListInput) (ListOutput, error) {
		st.mu.Lock()
		items := st.items
		st.mu.Unlock()
		page := []Item{}
		if in.Offset < len(items) {
			page = items[in.Offset:min(in.Offset+in.Limit, len(items))]
		}
		return ListOutput{Items: page, Total: len(items)}, nil
	})
	apiserver.Register(srv, apiserver.Operation{
		Method: "GET", URL: "/items/:id", Summary: "Get an item", Tags: []string{"items"},
		Responses: map[int]apiserver.ResponseDoc{404: {Description: "No such item"}},
	}, func(c *apiserver.Context[struct{}], in *ItemID) (Item, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		i := st.find(in.ID)
		if i < 0 {
			return Item{}, apiserver.NotFoundError(fmt.Sprintf("Item %s not found", in.ID))
		}
		return st.items[i], nil
	})
	apiserver.Register(srv, apiserver.Operation{
		Method: "POST", URL: "/items", Summary: "Create an item", Tags: []string{"items"},
		Authenticated: true, Status: 201,
	}, func(c *apiserver.Context[struct{}], in *CreateInput) (Item, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		it := Item{ID: strconv.Itoa(st.next), Name: in.Body.Name, Price: in.Body.Price, Tags: in.Body.Tags, CreatedAt: time.Now().UTC()}
		if it.Tags == nil {
			it.Tags = []string{}
		}
		st.next++
		st.items = append(slices.Clip(st.items), it) // a new array: readers keep theirs
		return it, nil
	})
	apiserver.Register(srv, apiserver.Operation{
		Method: "PUT", URL: "/items/:id", Summary: "Replace an item", Tags: []string{"items"},
		Authenticated: true, Responses: map[int]apiserver.ResponseDoc{404: {Description: "No such item"}},
	}, func(c *apiserver.Context[struct{}], in *UpdateInput) (Item, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		i := st.find(in.ID)
		if i < 0 {
			return Item{}, apiserver.NotFoundError(fmt.Sprintf("Item %s not found", in.ID))
		}
		items := slices.Clone(st.items)
		it := &items[i]
		it.Name, it.Price, it.Tags = in.Body.Name, in.Body.Price, in.Body.Tags
		if it.Tags == nil {
			it.Tags = []string{}
		}
		st.items = items
		return *it, nil
	})
	apiserver.Register(srv, apiserver.Operation{
		Method: "DELETE", URL: "/items/:id", Summary: "Delete an item", Tags: []string{"items"},
		Authenticated: true, Responses: map[int]apiserver.ResponseDoc{404: {Description: "No such item"}},
	}, func(c *apiserver.Context[struct{}], in *ItemID) (apiserver.NoBody, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		i := st.find(in.ID)
		if i < 0 {
			return apiserver.NoBody{}, apiserver.NotFoundError(fmt.Sprintf("Item %s not found", in.ID))
		}
		st.items = slices.Delete(slices.Clone(st.items), i, i+1)
		return apiserver.NoBody{}, nil
	})
}

func (st *Store) find(id string) int {
	return slices.IndexFunc(st.items, func(it Item) bool { return it.ID == id })
}

func main() {
	srv, _, err := NewServer(apiserver.Config[struct{}]{})
	if err != nil {
		slog.Error("items-example", "err", err)
		os.Exit(2)
	}
	if err := srv.Run(context.Background()); err != nil {
		srv.Logger().Error("items-example", "err", err)
		os.Exit(1)
	}
}
