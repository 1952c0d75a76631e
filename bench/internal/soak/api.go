package soak

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apistack/platform/bench/internal/jsonapi"

	"github.com/apistack/platform/bench/internal/netguard"
	chatclient "github.com/apistack/platform/services/chat/client"
)

// api calls the chat REST API.
type api struct {
	base   string
	admin  string
	client *http.Client

	lastError atomic.Value // string: the last non-2xx answer, for messages
}

type user struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

func newAPI(base, admin string) *api {
	return &api{base: strings.TrimRight(base, "/") + "/api/v1", admin: admin,
		client: &http.Client{Transport: netguard.Transport(32), Timeout: 15 * time.Second}}
}

// call sends a JSON request and decodes a 2xx answer into out (when not nil); it
// returns the status, or an error for a failed exchange.
func (a *api) call(ctx context.Context, method, path, token string, body, out any) (int, error) {
	status, refused, err := jsonapi.Call(ctx, a.client, method, a.base+path, token, body, out)
	if refused != nil {
		a.lastError.Store(fmt.Sprintf("%s %s: %d %.200s", method, path, status, refused))
	}
	return status, err
}

// createUsers makes n viewers named prefix_u0.. and returns them with their tokens.
func (a *api) createUsers(ctx context.Context, prefix string, n int) ([]user, error) {
	users := make([]user, n)
	for i := range users {
		body := map[string]string{"name": fmt.Sprintf("%s_u%d", prefix, i), "role": "viewer"}
		status, err := a.call(ctx, http.MethodPost, "/users", a.admin, body, &users[i])
		if err != nil {
			return nil, fmt.Errorf("create user %d: %w", i, err)
		}
		if status != http.StatusCreated || users[i].Token == "" {
			return nil, fmt.Errorf("create user %d: status %d (is the admin token right?): %v", i, status, a.lastError.Load())
		}
	}
	return users, nil
}

// send posts a message as u; id is the stored message's id on 201.
func (a *api) send(ctx context.Context, u user, channel, text string) (status int, id int64, err error) {
	var m struct {
		ID int64 `json:"id"`
	}
	status, err = a.call(ctx, http.MethodPost, strings.TrimPrefix(chatclient.SendPath, "/api/v1"), u.Token,
		chatclient.SendBody{Message: text, Channel: channel}, &m)
	return status, m.ID, err
}

func (a *api) timeout(ctx context.Context, u user, channel string, seconds int) (int, error) {
	return a.call(ctx, http.MethodPost, "/users/"+u.ID+"/timeout", a.admin,
		map[string]any{"seconds": seconds, "channel": channel, "reason": "soak"}, nil)
}

func (a *api) ban(ctx context.Context, u user) (int, error) {
	return a.call(ctx, http.MethodPost, "/users/"+u.ID+"/ban", a.admin, map[string]any{"reason": "soak"}, nil)
}

func (a *api) unban(ctx context.Context, u user) (int, error) {
	return a.call(ctx, http.MethodDelete, "/users/"+u.ID+"/ban", a.admin, nil, nil)
}

func (a *api) deleteMessage(ctx context.Context, channel string, id int64) (int, error) {
	return a.call(ctx, http.MethodDelete, "/messages/"+strconv.FormatInt(id, 10)+"?channel="+channel, a.admin, nil, nil)
}
