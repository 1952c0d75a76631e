package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
)

// fixture is what an endpoint acts on, made fresh by the broadcaster for
// every call so that one role's success does not change the next one's case.
type fixture struct {
	target    httpapi.CreatedUser // a user holding the target role
	messageID int64               // a message by target
	command   string              // an existing command
	filterID  string              // an existing filter
}

// guarded is a role-gated endpoint: the action of the permission table it
// needs, and the request and success status when allowed.
type guarded struct {
	action  chat.Action
	method  string
	path    func(f fixture) string
	body    func(f fixture) any
	success int
}

var seq int

func uniq(prefix string) string { seq++; return fmt.Sprintf("%s%d", prefix, seq) }

// guardedEndpoints lists every mutating endpoint (and the role-gated reads).
// Which action an endpoint needs is declared here; who holds the action is
// read from chat.PermissionTable, never written down a second time.
var guardedEndpoints = []guarded{
	{chat.ActionSendMessages, "POST", func(fixture) string { return "/api/v1/messages/send" },
		func(fixture) any { return map[string]any{"message": "hello"} }, 201},
	{chat.ActionDeleteMessages, "DELETE", func(f fixture) string { return fmt.Sprintf("/api/v1/messages/%d", f.messageID) }, nil, 200},
	{chat.ActionManageCommands, "POST", func(fixture) string { return "/api/v1/commands" },
		func(fixture) any { return map[string]any{"command": uniq("c"), "response": "x"} }, 201},
	{chat.ActionManageCommands, "PATCH", func(f fixture) string { return "/api/v1/commands/" + f.command },
		func(fixture) any { return map[string]any{"response": "changed"} }, 200},
	{chat.ActionManageCommands, "DELETE", func(f fixture) string { return "/api/v1/commands/" + f.command }, nil, 204},
	{chat.ActionManageFilters, "GET", func(fixture) string { return "/api/v1/filters" }, nil, 200},
	{chat.ActionManageFilters, "POST", func(fixture) string { return "/api/v1/filters" },
		func(fixture) any { return map[string]any{"kind": "blocked_term", "pattern": uniq("term")} }, 201},
	{chat.ActionManageFilters, "DELETE", func(f fixture) string { return "/api/v1/filters/" + f.filterID }, nil, 204},
	{chat.ActionManageChannel, "PATCH", func(fixture) string { return "/api/v1/channels/general" },
		func(fixture) any { return map[string]any{"slow_mode_seconds": 0} }, 200},
	{chat.ActionListUsers, "GET", func(fixture) string { return "/api/v1/users" }, nil, 200},
	{chat.ActionListUsers, "GET", func(f fixture) string { return "/api/v1/users/" + f.target.ID }, nil, 200},
	{chat.ActionManageUsers, "POST", func(fixture) string { return "/api/v1/users" },
		func(fixture) any { return map[string]any{"name": uniq("new_"), "role": "viewer"} }, 201},
	{chat.ActionManageUsers, "DELETE", func(f fixture) string { return "/api/v1/users/" + f.target.ID }, nil, 204},
	{chat.ActionChangeRoles, "PATCH", func(f fixture) string { return "/api/v1/users/" + f.target.ID },
		func(fixture) any { return map[string]any{"role": "subscriber"} }, 200},
	{chat.ActionTimeoutUsers, "POST", func(f fixture) string { return "/api/v1/users/" + f.target.ID + "/timeout" },
		func(fixture) any { return map[string]any{"seconds": 60} }, 200},
	{chat.ActionBanUsers, "POST", func(f fixture) string { return "/api/v1/users/" + f.target.ID + "/ban" },
		func(fixture) any { return map[string]any{"reason": "x"} }, 200},
	{chat.ActionBanUsers, "DELETE", func(f fixture) string { return "/api/v1/users/" + f.target.ID + "/ban" }, nil, 200},
}

func (s *stack) fixture(targetRole chat.Role) fixture {
	s.t.Helper()
	target, tok := s.user(targetRole)
	var f fixture
	f.target = target
	f.messageID = s.send(tok, "", "a message to act on").ID
	var c httpapi.Command
	s.must(201, "POST", "/api/v1/commands", adminToken, map[string]any{"command": uniq("fx"), "response": "x"}, &c)
	f.command = c.Command[1:]
	var fl httpapi.Filter
	s.must(201, "POST", "/api/v1/filters", adminToken, map[string]any{"kind": "blocked_term", "pattern": uniq("fxterm")}, &fl)
	f.filterID = fl.ID
	return f
}

// TestPermissionMatrix calls every role-gated endpoint as every role, on a
// viewer's resources, and expects exactly what the domain's permission
// table allows: the success status, or 403.
func TestPermissionMatrix(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		s := newStack(t, e, stackOptions{})
		actors := map[chat.Role]string{}
		for _, r := range chat.Roles {
			_, actors[r] = s.user(r)
		}
		for _, ep := range guardedEndpoints {
			for _, role := range chat.Roles {
				f := s.fixture(chat.RoleViewer)
				var body any
				if ep.body != nil {
					body = ep.body(f)
				}
				path := ep.path(f)
				want := http.StatusForbidden
				if chat.AllowedOn(role, ep.action, chat.RoleViewer) {
					want = ep.success
				}
				r := s.call(ep.method, path, actors[role], body)
				if r.Status != want {
					t.Errorf("%s %s as %s (%s): want %d, got %s", ep.method, path, role, ep.action, want, r)
				}
				if want == http.StatusForbidden {
					if m := r.JSON(); m["reason"] != string(ep.action) {
						t.Errorf("%s %s as %s: 403 without reason %q: %s", ep.method, path, role, ep.action, r.Raw)
					}
				}
			}
		}
	})
}

// TestTargetMatrix acts on users of every role with every role: actions on
// another user need a strictly higher role, so nobody moderates the
// broadcaster and a moderator cannot act on another moderator.
func TestTargetMatrix(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		s := newStack(t, e, stackOptions{})
		actors := map[chat.Role]httpapi.CreatedUser{}
		tokens := map[chat.Role]string{}
		for _, r := range chat.Roles {
			actors[r], tokens[r] = s.user(r)
		}
		for _, ep := range guardedEndpoints {
			if !actsOnUser(ep.action) || ep.method == "POST" && ep.action == chat.ActionManageUsers {
				continue // not an action on an existing user
			}
			for _, actor := range chat.Roles {
				for _, target := range chat.Roles {
					f := s.fixture(target)
					same := f.target.ID == actors[actor].ID
					want := http.StatusForbidden
					switch {
					case chat.AllowedOn(actor, ep.action, target):
						want = ep.success
					case same && ep.action == chat.ActionDeleteMessages && chat.Allowed(actor, ep.action):
						want = ep.success // one's own messages
					}
					if ep.action == chat.ActionChangeRoles && want == ep.success && !actor.Above(chat.RoleSubscriber) {
						want = http.StatusForbidden // the new role must be below the actor's too
					}
					var body any
					if ep.body != nil {
						body = ep.body(f)
					}
					r := s.call(ep.method, ep.path(f), tokens[actor], body)
					if r.Status != want {
						t.Errorf("%s %s: %s on a %s: want %d, got %s", ep.method, ep.path(f), actor, target, want, r)
					}
				}
			}
		}
	})
}

// actsOnUser reports whether the permission table says the action also
// needs the actor to outrank its target.
func actsOnUser(a chat.Action) bool {
	for _, p := range chat.PermissionTable {
		if p.Action == a {
			return p.Target == chat.TargetBelow
		}
	}
	return false
}
