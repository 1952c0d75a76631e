package httpapi_test

import (
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
)

// TestChannelScopes: the channel endpoints and the channel field of bans,
// commands and filters, over HTTP, on both engines.
func TestChannelScopes(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		s := newStack(t, e, stackOptions{limits: chat.Limits{ChannelRoles: 2}})
		alice, aliceTok := s.user(chat.RoleViewer)
		bob, bobTok := s.user(chat.RoleViewer)
		carol, carolTok := s.user(chat.RoleViewer)
		dave, _ := s.user(chat.RoleViewer)

		// The platform's administrator names alice broadcaster of alpha;
		// alice names bob its moderator.
		var got httpapi.User
		s.must(200, "PUT", "/api/v1/channels/Alpha/roles/"+alice.ID, adminToken, map[string]any{"role": "broadcaster"}, &got)
		if got.Role != "viewer" || got.Channel == nil || got.Channel.Name != "alpha" || got.Channel.Role != "broadcaster" || got.Channel.GivenRole != "broadcaster" {
			t.Fatalf("PUT broadcaster answered %+v %+v", got, got.Channel)
		}
		errorBody(t, s.call("PUT", "/api/v1/channels/alpha/roles/"+bob.ID, aliceTok, map[string]any{"role": "broadcaster"}), 403)
		s.must(200, "PUT", "/api/v1/channels/alpha/roles/"+bob.ID, aliceTok, map[string]any{"role": "moderator"}, nil)
		errorBody(t, s.call("PUT", "/api/v1/channels/alpha/roles/"+carol.ID, bobTok, map[string]any{"role": "vip"}), 403)
		errorBody(t, s.call("PUT", "/api/v1/channels/alpha/roles/"+carol.ID, aliceTok, map[string]any{"role": "king"}), 400)
		errorBody(t, s.call("PUT", "/api/v1/channels/alpha/roles/"+carol.ID, aliceTok, map[string]any{"role": "viewer"}), 400)
		errorBody(t, s.call("PUT", "/api/v1/channels/alpha/roles/nobody", aliceTok, map[string]any{"role": "vip"}), 404)
		errorBody(t, s.call("PUT", "/api/v1/channels/no$uch/roles/"+carol.ID, aliceTok, map[string]any{"role": "vip"}), 400)
		// The cap: two roles in alpha here.
		lim := errorBody(t, s.call("PUT", "/api/v1/channels/alpha/roles/"+carol.ID, aliceTok, map[string]any{"role": "vip"}), 409)
		if lim["reason"] != "limit" || lim["limit"] != float64(2) {
			t.Fatalf("past CHAT_MAX_CHANNEL_ROLES: %v", lim)
		}

		// The list, for alpha's moderators.
		var roles httpapi.ChannelRoles
		s.must(200, "GET", "/api/v1/channels/alpha/roles", bobTok, nil, &roles)
		if len(roles.Roles) != 2 || roles.Roles[0].UserID != alice.ID || roles.Roles[0].Role != "broadcaster" ||
			roles.Roles[1].Name != bob.Name || roles.Roles[1].Role != "moderator" {
			t.Fatalf("roles of alpha = %+v", roles.Roles)
		}
		errorBody(t, s.call("GET", "/api/v1/channels/alpha/roles", carolTok, nil), 403)
		errorBody(t, s.call("GET", "/api/v1/channels/beta/roles", bobTok, nil), 403)

		// A ban in alpha: 403 there, 201 in beta.
		s.must(200, "POST", "/api/v1/users/"+carol.ID+"/ban", bobTok, map[string]any{"channel": "alpha", "reason": "spam"}, &got)
		if got.Banned || got.Channel == nil || !got.Channel.Banned || got.Channel.ModerationReason != "spam" {
			t.Fatalf("channel ban answered %+v %+v", got, got.Channel)
		}
		if b := errorBody(t, s.call("POST", "/api/v1/messages/send", carolTok, map[string]any{"channel": "alpha", "message": "hi"}), 403); b["reason"] != "banned" {
			t.Fatalf("banned in alpha: %v", b)
		}
		s.send(carolTok, "beta", "hi")
		errorBody(t, s.call("POST", "/api/v1/users/"+dave.ID+"/ban", bobTok, map[string]any{"reason": "everywhere"}), 403)
		s.must(200, "DELETE", "/api/v1/users/"+carol.ID+"/ban?channel=alpha", bobTok, nil, nil)
		s.send(carolTok, "alpha", "back")

		// Commands and filters of alpha, by its moderator.
		var cmd httpapi.Command
		s.must(201, "POST", "/api/v1/commands", bobTok, map[string]any{"command": "!so", "response": "alpha's", "channel": "alpha", "cooldown_seconds": 0}, &cmd)
		if cmd.Channel != "alpha" {
			t.Fatalf("channel command = %+v", cmd)
		}
		errorBody(t, s.call("POST", "/api/v1/commands", bobTok, map[string]any{"command": "!so", "response": "x"}), 403)
		if m := s.send(carolTok, "alpha", "!so"); m.Reply == nil || m.Reply.Text != "alpha's" {
			t.Fatalf("!so in alpha: %+v", m.Reply)
		}
		if m := s.send(carolTok, "beta", "!so"); m.Reply != nil {
			t.Fatalf("!so in beta: %+v", m.Reply)
		}
		var list httpapi.CommandList
		s.must(200, "GET", "/api/v1/commands?channel=alpha", "", nil, &list)
		if len(list.Commands) != 1 || list.Commands[0].Channel != "alpha" {
			t.Fatalf("commands of alpha = %+v", list.Commands)
		}
		s.must(200, "GET", "/api/v1/commands", "", nil, &list)
		if len(list.Commands) != 0 {
			t.Fatalf("platform commands = %+v", list.Commands)
		}
		s.must(200, "GET", "/api/v1/commands/so?channel=alpha", "", nil, nil)
		errorBody(t, s.call("GET", "/api/v1/commands/so", "", nil), 404)
		s.must(200, "PATCH", "/api/v1/commands/so?channel=alpha", bobTok, map[string]any{"response": "changed"}, nil)
		s.must(204, "DELETE", "/api/v1/commands/so?channel=alpha", bobTok, nil, nil)

		var f httpapi.Filter
		s.must(201, "POST", "/api/v1/filters", bobTok, map[string]any{"kind": "blocked_term", "pattern": "darn", "channel": "alpha"}, &f)
		if f.Channel != "alpha" {
			t.Fatalf("channel filter = %+v", f)
		}
		errorBody(t, s.call("POST", "/api/v1/messages/send", carolTok, map[string]any{"channel": "alpha", "message": "darn"}), 422)
		s.send(carolTok, "beta", "darn")
		var fl httpapi.FilterList
		s.must(200, "GET", "/api/v1/filters?channel=alpha", bobTok, nil, &fl)
		if len(fl.Filters) != 1 {
			t.Fatalf("filters of alpha = %+v", fl.Filters)
		}
		errorBody(t, s.call("GET", "/api/v1/filters", bobTok, nil), 403)
		errorBody(t, s.call("DELETE", "/api/v1/filters/"+f.ID, bobTok, nil), 403)
		s.must(204, "DELETE", "/api/v1/filters/"+f.ID+"?channel=alpha", bobTok, nil, nil)

		// Back to viewer there: 204, and bob moderates alpha no more.
		s.must(204, "DELETE", "/api/v1/channels/alpha/roles/"+bob.ID, aliceTok, nil, nil)
		errorBody(t, s.call("GET", "/api/v1/channels/alpha/roles", bobTok, nil), 403)
	})
}
