package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
)

// TestAPI is the behaviour suite of the HTTP API, run against the memory
// engine and a real redis-server through real HTTP on loopback.
func TestAPI(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		t.Run("MessagesPageWithCursors", func(t *testing.T) { testMessagesPaging(t, e) })
		t.Run("SendValidatesAndStores", func(t *testing.T) { testSend(t, e) })
		t.Run("AuthStatuses", func(t *testing.T) { testAuth(t, e) })
		t.Run("PrivateReading", func(t *testing.T) { testPrivateRead(t, e) })
		t.Run("DeleteLeavesTombstone", func(t *testing.T) { testDelete(t, e) })
		t.Run("CommandsCRUD", func(t *testing.T) { testCommandsCRUD(t, e) })
		t.Run("CommandVariables", func(t *testing.T) { testCommandVariables(t, e) })
		t.Run("CommandCooldownsAndLevels", func(t *testing.T) { testCommandCooldowns(t, e) })
		t.Run("Users", func(t *testing.T) { testUsers(t, e) })
		t.Run("TimeoutsAndBans", func(t *testing.T) { testModeration(t, e) })
		t.Run("FiltersWithEvasions", func(t *testing.T) { testFilters(t, e) })
		t.Run("SlowMode", func(t *testing.T) { testSlowMode(t, e) })
		t.Run("SendLimit", func(t *testing.T) { testSendLimit(t, e) })
		t.Run("Permissions", func(t *testing.T) { testPermissions(t, e) })
	})
}

func testMessagesPaging(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	_, tok := s.user(chat.RoleViewer)
	if got := s.messages(""); len(got) != 0 {
		t.Fatalf("a new channel has messages: %v", got)
	}
	for i := 1; i <= 7; i++ {
		s.send(tok, "", fmt.Sprintf("m%d", i))
	}
	s.send(tok, "Other", "elsewhere")

	ids := func(ms []httpapi.Message) string {
		var b []string
		for _, m := range ms {
			b = append(b, fmt.Sprint(m.ID))
		}
		return strings.Join(b, ",")
	}
	cases := []struct{ query, want string }{
		{"", "1,2,3,4,5,6,7"},
		{"?channel=general", "1,2,3,4,5,6,7"},
		{"?limit=3", "5,6,7"},
		{"?limit=3&before=5", "2,3,4"},
		{"?limit=2&after=3", "4,5"},
		{"?after=2&before=6", "3,4,5"},
		{"?after=7", ""},
		{"?limit=3&after=0", "1,2,3"}, // after=0: from the start, not the latest page
		{"?after=0", "1,2,3,4,5,6,7"},
		{"?channel=other", "1"},
		{"?channel=OTHER", "1"},
		{"?channel=empty", ""},
	}
	for _, c := range cases {
		if got := ids(s.messages(c.query)); got != c.want {
			t.Errorf("GET /messages%s: ids %q, want %q", c.query, got, c.want)
		}
	}
	page := s.messages("?limit=1")
	if m := page[0]; m.Text != "m7" || m.Channel != "general" || m.User.Role != "viewer" || m.Bot || m.CreatedAt.IsZero() {
		t.Fatalf("stored message: %+v", m)
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?before=0", "?after=-1", "?channel=bad%20name", "?channel=-x"} {
		r := s.call("GET", "/api/v1/messages"+q, "", nil)
		m := errorBody(t, r, 400)
		if _, ok := m["details"]; !ok {
			t.Errorf("GET /messages%s: 400 without details: %s", q, r.Raw)
		}
	}
	// The default page is 50 of the latest.
	for i := 0; i < 55; i++ {
		s.send(adminToken, "busy", "x")
	}
	if got := s.messages("?channel=busy"); len(got) != 50 || got[0].ID != 6 || got[49].ID != 55 {
		t.Fatalf("default page: %d messages from %d", len(got), got[0].ID)
	}
	if got := s.messages("?channel=busy&limit=200"); len(got) != 55 {
		t.Fatalf("limit=200: %d messages", len(got))
	}
}

func testSend(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	u, tok := s.user(chat.RoleSubscriber)
	m := s.send(tok, "", "  hello world  ")
	if m.Text != "hello world" || m.User.ID != u.ID || m.User.Name != u.Name || m.Channel != "general" || m.Reply != nil {
		t.Fatalf("sent: %+v", m)
	}
	if got := s.messages(""); len(got) != 1 || got[0].ID != m.ID || got[0].Text != m.Text || !got[0].CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("a 201 must mean stored: %+v", got)
	}
	long := strings.Repeat("é", 500)
	if got := s.send(tok, "", long); got.Text != long {
		t.Fatal("500 characters must pass")
	}
	bad := []any{
		map[string]any{"message": ""},
		map[string]any{"message": "   "},
		map[string]any{"message": strings.Repeat("a", 501)},
		map[string]any{},
		map[string]any{"message": "hi", "channel": "no spaces"},
		map[string]any{"message": "hi", "extra": 1},
		map[string]any{"message": 5},
		`{"message": "unterminated`,
	}
	for _, b := range bad {
		r := s.call("POST", "/api/v1/messages/send", tok, b)
		errorBody(t, r, 400)
	}
	if r := s.call("POST", "/api/v1/messages/send", tok, nil); r.Status != 400 {
		t.Fatalf("no body: %s", r)
	}
	// Nothing of the refused ones was stored.
	if got := s.messages(""); len(got) != 2 {
		t.Fatalf("refused messages were stored: %d", len(got))
	}
}

func testAuth(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	body := map[string]any{"message": "hi"}
	r := s.call("POST", "/api/v1/messages/send", "", body)
	errorBody(t, r, 401)
	if r.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 without WWW-Authenticate: %v", r.Header)
	}
	// An unknown token (a deleted user's too) is 401, as on the WebSocket.
	r = s.call("POST", "/api/v1/messages/send", "chat_not-a-token", body)
	errorBody(t, r, 401)
	if r.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 without WWW-Authenticate: %v", r.Header)
	}

	req, _ := http.NewRequest("GET", s.URL+"/api/v1/users/me", nil)
	req.Header.Set("Authorization", "Basic abc")
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("Basic auth: %d", res.StatusCode)
	}
	var me httpapi.User
	s.must(200, "GET", "/api/v1/users/me", adminToken, nil, &me)
	if me.Role != "broadcaster" {
		t.Fatalf("CHAT_ADMIN_TOKEN is not the broadcaster: %+v", me)
	}
	// Public reads ignore tokens: a bad one does not turn a read into a 403.
	s.must(200, "GET", "/api/v1/messages", "", nil, nil)
	s.must(200, "GET", "/api/v1/commands", "", nil, nil)
	s.must(200, "GET", "/api/v1/channels/general", "", nil, nil)
	s.must(200, "GET", "/api/v1/permissions", "", nil, nil)
	// Unknown routes and methods answer with the standard body too.
	errorBody(t, s.call("GET", "/api/v1/nothing", "", nil), 404)
	errorBody(t, s.call("PUT", "/api/v1/messages", "", nil), 405)
	errorBody(t, s.call("POST", "/api/v1/messages/send", adminToken, strings.Repeat(" ", 10)), 400)
	errorBody(t, s.call("POST", "/api/v1/messages/send", adminToken, `{"message":"`+strings.Repeat("x", 2<<20)+`"}`), 413)
	req, _ = http.NewRequest("POST", s.URL+"/api/v1/messages/send", strings.NewReader("message=hi"))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 415 {
		t.Fatalf("form body: %d", res.StatusCode)
	}
}

func testPrivateRead(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{privateRead: true})
	for _, p := range []string{"/api/v1/messages", "/api/v1/commands", "/api/v1/commands/hello", "/api/v1/channels/general"} {
		errorBody(t, s.call("GET", p, "", nil), 401)
	}
	_, tok := s.user(chat.RoleViewer)
	s.send(tok, "", "members only")
	var p httpapi.MessagePage
	s.must(200, "GET", "/api/v1/messages", tok, nil, &p)
	if len(p.Messages) != 1 {
		t.Fatalf("messages: %+v", p)
	}
	s.must(200, "GET", "/api/v1/commands", tok, nil, nil)
	s.must(200, "GET", "/api/v1/channels/general", tok, nil, nil)
	errorBody(t, s.call("GET", "/api/v1/messages", "chat_wrong", nil), 401)
}

func testDelete(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	_, viewer := s.user(chat.RoleViewer)
	_, mod := s.user(chat.RoleModerator)
	m := s.send(viewer, "", "regrettable")
	s.send(viewer, "", "fine")
	var tomb httpapi.Message
	s.must(200, "DELETE", fmt.Sprintf("/api/v1/messages/%d", m.ID), mod, nil, &tomb)
	if !tomb.Deleted || tomb.Text != "" || tomb.DeletedAt == nil || tomb.ID != m.ID {
		t.Fatalf("tombstone: %+v", tomb)
	}
	got := s.messages("")
	if len(got) != 2 || !got[0].Deleted || got[0].Text != "" || got[1].Deleted {
		t.Fatalf("after delete: %+v", got)
	}
	// Deleting again changes nothing.
	s.must(200, "DELETE", fmt.Sprintf("/api/v1/messages/%d", m.ID), mod, nil, nil)
	errorBody(t, s.call("DELETE", "/api/v1/messages/99", mod, nil), 404)
	errorBody(t, s.call("DELETE", "/api/v1/messages/1?channel=other", mod, nil), 404)
	errorBody(t, s.call("DELETE", "/api/v1/messages/0", mod, nil), 400)
	errorBody(t, s.call("DELETE", "/api/v1/messages/abc", mod, nil), 400)
	errorBody(t, s.call("DELETE", fmt.Sprintf("/api/v1/messages/%d", m.ID+1), viewer, nil), 403)
}

func testCommandsCRUD(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	_, mod := s.user(chat.RoleModerator)
	var c httpapi.Command
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "Hello", "response": "Hi ${user}"}, &c)
	if c.Command != "!hello" || c.CooldownSeconds != 5 || c.UserCooldownSeconds != 0 || c.UserLevel != "viewer" || !c.Enabled || c.Aliases == nil || c.Count != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	// The same trigger however written is taken.
	for _, name := range []string{"hello", "!hello", "!HELLO", " !Hello "} {
		m := errorBody(t, s.call("POST", "/api/v1/commands", mod, map[string]any{"command": name, "response": "x"}), 409)
		_ = m
	}
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "!bye", "response": "Bye", "aliases": []string{"cya", "!Later"},
		"cooldown_seconds": 0, "user_level": "subscriber", "enabled": false}, &c)
	if strings.Join(c.Aliases, ",") != "!cya,!later" || c.CooldownSeconds != 0 || c.UserLevel != "subscriber" || c.Enabled {
		t.Fatalf("options: %+v", c)
	}
	// An alias that is another command's trigger or alias is a conflict.
	errorBody(t, s.call("POST", "/api/v1/commands", mod, map[string]any{"command": "x1", "response": "x", "aliases": []string{"hello"}}), 409)
	errorBody(t, s.call("POST", "/api/v1/commands", mod, map[string]any{"command": "cya", "response": "x"}), 409)
	for _, b := range []map[string]any{
		{"command": "has space", "response": "x"},
		{"command": "!", "response": "x"},
		{"command": "ok", "response": ""},
		{"command": "ok"},
		{"command": "ok", "response": "x", "cooldown_seconds": -1},
		{"command": "ok", "response": "x", "cooldown_seconds": 86401},
		{"command": "ok", "response": "x", "user_level": "king"},
		{"command": "ok", "response": "x", "aliases": []string{"bad alias"}},
	} {
		errorBody(t, s.call("POST", "/api/v1/commands", mod, b), 400)
	}

	var list httpapi.CommandList
	s.must(200, "GET", "/api/v1/commands", "", nil, &list)
	if len(list.Commands) != 2 || list.Commands[0].Command != "!bye" || list.Commands[1].Command != "!hello" {
		t.Fatalf("list: %+v", list)
	}
	for _, name := range []string{"hello", "%21hello", "HELLO"} {
		s.must(200, "GET", "/api/v1/commands/"+name, "", nil, &c)
		if c.Command != "!hello" {
			t.Fatalf("GET %s: %+v", name, c)
		}
	}
	s.must(200, "GET", "/api/v1/commands/later", "", nil, &c) // by alias
	if c.Command != "!bye" {
		t.Fatalf("by alias: %+v", c)
	}
	errorBody(t, s.call("GET", "/api/v1/commands/nope", "", nil), 404)
	errorBody(t, s.call("GET", "/api/v1/commands/bad%20name", "", nil), 400)

	s.must(200, "PATCH", "/api/v1/commands/hello", mod, map[string]any{"response": "Hey", "enabled": false, "aliases": []string{"hi"}}, &c)
	if c.Response != "Hey" || c.Enabled || strings.Join(c.Aliases, ",") != "!hi" || c.CooldownSeconds != 5 {
		t.Fatalf("patched: %+v", c)
	}
	errorBody(t, s.call("PATCH", "/api/v1/commands/hello", mod, map[string]any{"aliases": []string{"cya"}}), 409)
	errorBody(t, s.call("PATCH", "/api/v1/commands/nope", mod, map[string]any{"response": "x"}), 404)
	errorBody(t, s.call("PATCH", "/api/v1/commands/hello", mod, map[string]any{"cooldown_seconds": 99999999}), 400)

	s.must(204, "DELETE", "/api/v1/commands/hi", mod, nil, nil) // by alias
	errorBody(t, s.call("GET", "/api/v1/commands/hello", "", nil), 404)
	errorBody(t, s.call("DELETE", "/api/v1/commands/hello", mod, nil), 404)
	// The trigger is free again.
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "hi", "response": "x"}, nil)
}

func testCommandVariables(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	u, tok := s.user(chat.RoleViewer)
	s.must(201, "POST", "/api/v1/commands", adminToken, map[string]any{
		"command": "greet", "response": "${user} greets ${touser} in ${channel} (#${count}): ${args} ${unknown}", "cooldown_seconds": 0}, nil)

	// A response whose reply to a plain "!echo" would be empty is refused,
	// on the field, like a message with nothing in it.
	r := s.call("POST", "/api/v1/commands", adminToken, map[string]any{"command": "echo", "response": "${args}"})
	if details, _ := errorBody(t, r, 400)["details"].([]any); len(details) != 1 || !strings.Contains(fmt.Sprint(details[0]), "body.response") {
		t.Fatalf("want 400 on body.response, got %s", r.Raw)
	}

	m := s.send(tok, "Lobby", "!Greet @bob and friends")
	if m.Reply == nil {
		t.Fatalf("no bot reply: %+v", m)
	}
	want := u.Name + " greets bob in lobby (#1): @bob and friends ${unknown}"
	if r := m.Reply; r.Text != want || !r.Bot || r.User.ID != "bot" || r.Channel != "lobby" || r.ID != m.ID+1 {
		t.Fatalf("reply %+v, want text %q", r, want)
	}
	m = s.send(tok, "lobby", "!greet")
	if want := u.Name + " greets " + u.Name + " in lobby (#2):  ${unknown}"; m.Reply == nil || m.Reply.Text != want {
		t.Fatalf("no-argument reply %+v, want %q", m.Reply, want)
	}
	// The reply is stored and delivered like any message.
	got := s.messages("?channel=lobby")
	if len(got) != 4 || !got[1].Bot || !got[3].Bot || got[3].Text != m.Reply.Text {
		t.Fatalf("stored: %+v", got)
	}
	// Not at the start: no command.
	if m := s.send(tok, "lobby", "say !greet"); m.Reply != nil {
		t.Fatalf("a trigger in the middle answered: %+v", m.Reply)
	}
	var c httpapi.Command
	s.must(200, "GET", "/api/v1/commands/greet", "", nil, &c)
	if c.Count != 2 {
		t.Fatalf("count: %d", c.Count)
	}
}

func testCommandCooldowns(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	_, v1 := s.user(chat.RoleViewer)
	_, v2 := s.user(chat.RoleViewer)
	_, sub := s.user(chat.RoleSubscriber)
	_, mod := s.user(chat.RoleModerator)
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "cd", "response": "cd ${count}", "cooldown_seconds": 3600}, nil)
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "ucd", "response": "ucd", "cooldown_seconds": 0, "user_cooldown_seconds": 7200}, nil)
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "subs", "response": "subs only", "cooldown_seconds": 0, "user_level": "subscriber"}, nil)
	s.must(201, "POST", "/api/v1/commands", mod, map[string]any{"command": "off", "response": "off", "cooldown_seconds": 0, "enabled": false}, nil)

	replied := func(tok, text string) bool { t.Helper(); return s.send(tok, "", text).Reply != nil }

	// Channel cooldown: once an hour for everyone, but moderators skip it.
	// (Long waits on a stepped clock: Redis expires gates in real time too,
	// so the real test must stay far shorter than any wait.)
	if !replied(v1, "!cd") || replied(v1, "!cd") || replied(v2, "!cd") {
		t.Fatal("channel cooldown not applied")
	}
	if !replied(mod, "!cd") {
		t.Fatal("moderators skip cooldowns")
	}
	s.Clock.Advance(3599 * time.Second)
	if replied(v2, "!cd") {
		t.Fatal("cooldown ended early")
	}
	s.Clock.Advance(time.Second)
	if !replied(v2, "!cd") {
		t.Fatal("cooldown did not end")
	}
	// Per-user cooldown: each user once per two hours.
	if !replied(v1, "!ucd") || replied(v1, "!ucd") || !replied(v2, "!ucd") {
		t.Fatal("per-user cooldown not applied per user")
	}
	s.Clock.Advance(7200 * time.Second)
	if !replied(v1, "!ucd") {
		t.Fatal("per-user cooldown did not end")
	}
	// Level: the lowest role that may trigger it.
	if replied(v1, "!subs") || !replied(sub, "!subs") || !replied(mod, "!subs") {
		t.Fatal("user_level not respected")
	}
	// Disabled: silent.
	if replied(mod, "!off") {
		t.Fatal("a disabled command answered")
	}
}

func testUsers(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	var u httpapi.CreatedUser
	r := s.must(201, "POST", "/api/v1/users", adminToken, map[string]any{"name": "Alice", "role": "vip"}, &u)
	if u.Name != "Alice" || u.Role != "vip" || !strings.HasPrefix(u.Token, "chat_") || u.ID == "" || u.Banned {
		t.Fatalf("created: %s", r.Raw)
	}
	var me httpapi.User
	s.must(200, "GET", "/api/v1/users/me", u.Token, nil, &me)
	if me.ID != u.ID || me.Role != "vip" || me.Channel != nil {
		t.Fatalf("me: %+v", me)
	}
	// With a channel, the role held there: a moderator of #music, a vip
	// (the platform-wide role) in #general.
	s.must(200, "PUT", "/api/v1/channels/music/roles/"+u.ID, adminToken, map[string]any{"role": "moderator"}, nil)
	s.must(200, "GET", "/api/v1/users/me?channel=music", u.Token, nil, &me)
	if me.Role != "vip" || me.Channel == nil || me.Channel.Name != "music" || me.Channel.Role != "moderator" {
		t.Fatalf("me in #music: %+v", me)
	}
	s.must(200, "GET", "/api/v1/users/me?channel=general", u.Token, nil, &me)
	if me.Channel == nil || me.Channel.Role != "vip" {
		t.Fatalf("me in #general: %+v", me)
	}
	errorBody(t, s.call("GET", "/api/v1/users/me?channel=no%20such", u.Token, nil), 400)
	// Default role; names unique regardless of case; bad names.
	var v httpapi.CreatedUser
	s.must(201, "POST", "/api/v1/users", adminToken, map[string]any{"name": "bob"}, &v)
	if v.Role != "viewer" {
		t.Fatalf("default role: %+v", v)
	}
	errorBody(t, s.call("POST", "/api/v1/users", adminToken, map[string]any{"name": "ALICE"}), 409)
	for _, b := range []map[string]any{{"name": "a"}, {"name": "has space"}, {"name": strings.Repeat("x", 26)}, {"name": "ok_name", "role": "king"}, {"name": "bot"}} {
		errorBody(t, s.call("POST", "/api/v1/users", adminToken, b), 400)
	}
	// Nobody is made broadcaster through the API.
	errorBody(t, s.call("POST", "/api/v1/users", adminToken, map[string]any{"name": "boss", "role": "broadcaster"}), 403)

	// The token is shown once: never in a listing or a read.
	var list httpapi.UserList
	lr := s.must(200, "GET", "/api/v1/users", adminToken, nil, &list)
	if strings.Contains(string(lr.Raw), u.Token) || strings.Contains(string(lr.Raw), `"token"`) || len(list.Users) != 3 {
		t.Fatalf("listing: %s", lr.Raw)
	}
	names := []string{}
	for _, x := range list.Users {
		names = append(names, x.Name)
	}
	if strings.Join(names, ",") != "Alice,bob,broadcaster" {
		t.Fatalf("order: %v", names)
	}
	var got httpapi.User
	s.must(200, "GET", "/api/v1/users/"+v.ID, adminToken, nil, &got)
	s.must(200, "GET", "/api/v1/users/"+v.ID, v.Token, nil, &got) // oneself
	errorBody(t, s.call("GET", "/api/v1/users/"+u.ID, v.Token, nil), 403)
	errorBody(t, s.call("GET", "/api/v1/users/u_nobody", adminToken, nil), 404)

	// Roles change; the token follows the user's current role.
	s.must(200, "PATCH", "/api/v1/users/"+v.ID, adminToken, map[string]any{"role": "moderator"}, &got)
	if got.Role != "moderator" {
		t.Fatalf("role: %+v", got)
	}
	s.must(200, "GET", "/api/v1/users", v.Token, nil, nil) // moderators list users
	errorBody(t, s.call("PATCH", "/api/v1/users/"+v.ID, adminToken, map[string]any{"role": "broadcaster"}), 403)
	errorBody(t, s.call("PATCH", "/api/v1/users/"+v.ID, adminToken, map[string]any{"role": "nope"}), 400)
	errorBody(t, s.call("PATCH", "/api/v1/users/"+v.ID, adminToken, map[string]any{}), 400)
	errorBody(t, s.call("PATCH", "/api/v1/users/u_nobody", adminToken, map[string]any{"role": "vip"}), 404)

	// Deleting revokes the token: it is unknown now (401).
	s.must(204, "DELETE", "/api/v1/users/"+u.ID, adminToken, nil, nil)
	errorBody(t, s.call("GET", "/api/v1/users/me", u.Token, nil), 401)
	errorBody(t, s.call("DELETE", "/api/v1/users/"+u.ID, adminToken, nil), 404)
	// Nobody deletes the broadcaster.
	var admin httpapi.User
	s.must(200, "GET", "/api/v1/users/me", adminToken, nil, &admin)
	errorBody(t, s.call("DELETE", "/api/v1/users/"+admin.ID, adminToken, nil), 403)
}

func testModeration(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	target, tok := s.user(chat.RoleViewer)
	_, mod := s.user(chat.RoleModerator)
	var u httpapi.User
	s.must(200, "POST", "/api/v1/users/"+target.ID+"/timeout", mod, map[string]any{"seconds": 600, "reason": "calm down"}, &u)
	until := s.Clock.Now().Add(600 * time.Second)
	if u.TimedOutUntil == nil || !u.TimedOutUntil.Equal(until) || u.ModerationReason != "calm down" {
		t.Fatalf("timed out: %+v", u)
	}
	m := errorBody(t, s.call("POST", "/api/v1/messages/send", tok, map[string]any{"message": "hi"}), 403)
	if m["reason"] != "timed_out" || m["until"] != until.Format(time.RFC3339) || !strings.Contains(m["message"].(string), "until") {
		t.Fatalf("timed-out send: %v", m)
	}
	s.Clock.Advance(600 * time.Second)
	s.send(tok, "", "back")

	for _, b := range []map[string]any{{"seconds": 0}, {"seconds": 1209601}, {}, {"seconds": 5, "reason": strings.Repeat("r", 501)}} {
		errorBody(t, s.call("POST", "/api/v1/users/"+target.ID+"/timeout", mod, b), 400)
	}
	errorBody(t, s.call("POST", "/api/v1/users/u_nobody/timeout", mod, map[string]any{"seconds": 5}), 404)

	s.must(200, "POST", "/api/v1/users/"+target.ID+"/ban", mod, map[string]any{"reason": "spam"}, &u)
	if !u.Banned {
		t.Fatalf("ban: %+v", u)
	}
	m = errorBody(t, s.call("POST", "/api/v1/messages/send", tok, map[string]any{"message": "hi"}), 403)
	if until, ok := m["until"]; m["reason"] != "banned" || !ok || until != nil {
		t.Fatalf("banned send: %v", m)
	}
	errorBody(t, s.call("POST", "/api/v1/users/"+target.ID+"/ban", mod, nil), 409)
	errorBody(t, s.call("POST", "/api/v1/users/"+target.ID+"/timeout", mod, map[string]any{"seconds": 5}), 409)
	// Banned users still read.
	s.must(200, "GET", "/api/v1/messages", tok, nil, nil)
	var unbanned httpapi.User // fresh: omitted fields must stay empty
	s.must(200, "DELETE", "/api/v1/users/"+target.ID+"/ban", mod, nil, &unbanned)
	if unbanned.Banned || unbanned.TimedOutUntil != nil || unbanned.ModerationReason != "" {
		t.Fatalf("unbanned: %+v", unbanned)
	}
	s.send(tok, "", "free again")
	s.must(200, "DELETE", "/api/v1/users/"+target.ID+"/ban", mod, nil, nil) // again: fine
	// A ban without a body is fine too.
	s.must(200, "POST", "/api/v1/users/"+target.ID+"/ban", mod, nil, nil)
}

func testFilters(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	_, viewer := s.user(chat.RoleViewer)
	_, vip := s.user(chat.RoleVIP)
	_, mod := s.user(chat.RoleModerator)
	create := func(body map[string]any) httpapi.Filter {
		t.Helper()
		var f httpapi.Filter
		s.must(201, "POST", "/api/v1/filters", mod, body, &f)
		return f
	}
	term := create(map[string]any{"kind": "blocked_term", "pattern": "scam*"})
	if term.Action != "block" || term.MinRole != "moderator" || term.ID == "" {
		t.Fatalf("defaults: %+v", term)
	}
	create(map[string]any{"kind": "blocked_term", "pattern": "darn", "action": "mask"})
	create(map[string]any{"kind": "blocked_term", "pattern": "ass"})
	create(map[string]any{"kind": "regex", "pattern": `b[a@4]dw[o0]rd`, "action": "mask"})
	links := create(map[string]any{"kind": "links"})
	if links.MinRole != "vip" {
		t.Fatalf("links default min_role: %+v", links)
	}
	create(map[string]any{"kind": "caps", "threshold": 70, "min_length": 10})

	blocked := []struct{ text, reason string }{
		{"this is a scam", "blocked_term"},
		{"SCAMMERS everywhere", "blocked_term"},
		{"ｓｃａｍ", "blocked_term"},             // full-width letters
		{"s\u200bcam alert", "blocked_term"}, // zero-width space
		{"ŝcàm", "blocked_term"},             // accents
		{"S\u00adCAM", "blocked_term"},       // soft hyphen
		{"kiss my ass", "blocked_term"},
		{"visit example.com now", "links"},
		{"https://evil.example/x", "links"},
		{"www.EXAMPLE.org", "links"},
		{"WHY IS EVERYONE SHOUTING HERE", "caps"},
	}
	for _, b := range blocked {
		r := s.call("POST", "/api/v1/messages/send", viewer, map[string]any{"message": b.text})
		m := errorBody(t, r, 422)
		details, _ := m["details"].([]any)
		if m["reason"] != b.reason || len(details) != 1 || !strings.Contains(fmt.Sprint(details[0]), b.reason) {
			t.Errorf("%q: want 422 %s with a detail, got %s", b.text, b.reason, r.Raw)
		}
	}
	if got := s.messages(""); len(got) != 0 {
		t.Fatalf("blocked messages were stored: %+v", got)
	}
	// Whole words only; a short capital word is not shouting.
	for _, ok := range []string{"a classic class", "OK", "I SAW IT"} {
		s.send(viewer, "", ok)
	}
	// Masks store and return the masked text.
	if m := s.send(viewer, "", "Darn, that DARN badw0rd"); m.Text != "****, that **** *******" {
		t.Fatalf("masked: %q", m.Text)
	}
	// Roles at or above min_role are not checked.
	s.send(vip, "", "see example.com")
	s.send(mod, "", "no scam filter for moderators, SHOUTING ALLOWED TOO")

	var list httpapi.FilterList
	s.must(200, "GET", "/api/v1/filters", mod, nil, &list)
	if len(list.Filters) != 6 || list.Filters[0].ID != term.ID {
		t.Fatalf("list: %+v", list)
	}
	for _, b := range []map[string]any{
		{"kind": "nope"},
		{"kind": "blocked_term"},
		{"kind": "blocked_term", "pattern": "a*b"},
		{"kind": "regex", "pattern": "("},
		{"kind": "regex", "pattern": ".*"},
		{"kind": "regex", "pattern": strings.Repeat("a", 257)},
		{"kind": "caps", "threshold": 101},
		{"kind": "links", "action": "explode"},
		{"kind": "links", "min_role": "king"},
	} {
		errorBody(t, s.call("POST", "/api/v1/filters", mod, b), 400)
	}
	s.must(204, "DELETE", "/api/v1/filters/"+term.ID, mod, nil, nil)
	errorBody(t, s.call("DELETE", "/api/v1/filters/"+term.ID, mod, nil), 404)
	s.send(viewer, "", "scam is allowed now")
}

func testSlowMode(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	_, viewer := s.user(chat.RoleViewer)
	_, vip := s.user(chat.RoleVIP)
	_, mod := s.user(chat.RoleModerator)
	var ch httpapi.Channel
	s.must(200, "GET", "/api/v1/channels/Slow", "", nil, &ch)
	if ch.Name != "slow" || ch.SlowModeSeconds != 0 {
		t.Fatalf("default channel: %+v", ch)
	}
	s.must(200, "PATCH", "/api/v1/channels/slow", mod, map[string]any{"slow_mode_seconds": 120}, &ch)
	if ch.SlowModeSeconds != 120 {
		t.Fatalf("patched: %+v", ch)
	}
	s.must(200, "GET", "/api/v1/channels/slow", "", nil, &ch)
	if ch.SlowModeSeconds != 120 {
		t.Fatalf("read back: %+v", ch)
	}
	for _, b := range []map[string]any{{"slow_mode_seconds": -1}, {"slow_mode_seconds": 121}, {"slow_mode_seconds": "x"}} {
		errorBody(t, s.call("PATCH", "/api/v1/channels/slow", mod, b), 400)
	}
	errorBody(t, s.call("PATCH", "/api/v1/channels/bad%20name", mod, map[string]any{"slow_mode_seconds": 1}), 400)

	s.send(viewer, "slow", "first")
	s.Clock.Advance(30 * time.Second)
	r := s.call("POST", "/api/v1/messages/send", viewer, map[string]any{"message": "too soon", "channel": "slow"})
	m := errorBody(t, r, 429)
	if r.Header.Get("Retry-After") != "90" || m["reason"] != "slow_mode" || m["retry_after_seconds"] != float64(90) {
		t.Fatalf("slow mode: %v %s", r.Header, r.Raw)
	}
	// Other channels are not slow; vips bypass.
	s.send(viewer, "", "elsewhere")
	s.send(vip, "slow", "vip 1")
	s.send(vip, "slow", "vip 2")
	s.Clock.Advance(90 * time.Second)
	s.send(viewer, "slow", "after the wait")
	if got := s.messages("?channel=slow"); len(got) != 4 {
		t.Fatalf("the refused message was stored: %+v", got)
	}
}

func testSendLimit(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{sendLimit: chat.SendLimit{Max: 2, Window: time.Hour}})
	_, viewer := s.user(chat.RoleViewer)
	_, mod := s.user(chat.RoleModerator)
	s.send(viewer, "", "1")
	s.send(viewer, "", "2")
	r := s.call("POST", "/api/v1/messages/send", viewer, map[string]any{"message": "3"})
	m := errorBody(t, r, 429)
	if m["reason"] != "send_limit" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("send limit: %v %s", r.Header, r.Raw)
	}
	// Per user: another user is not affected; moderators are limited too...
	s.send(mod, "", "1")
	s.send(mod, "", "2")
	errorBody(t, s.call("POST", "/api/v1/messages/send", mod, map[string]any{"message": "3"}), 429)
	// ...but never the broadcaster.
	for i := 0; i < 5; i++ {
		s.send(adminToken, "", "broadcast")
	}
}

func testPermissions(t *testing.T, e engine) {
	s := newStack(t, e, stackOptions{})
	var p httpapi.Permissions
	s.must(200, "GET", "/api/v1/permissions", "", nil, &p)
	if len(p.Permissions) != len(chat.PermissionTable) || strings.Join(p.Roles, ",") != "broadcaster,moderator,vip,subscriber,viewer" {
		t.Fatalf("permissions: %+v", p)
	}
	for i, row := range chat.PermissionTable {
		got := p.Permissions[i]
		if got.Action != string(row.Action) || got.MinRole != string(row.MinRole) || got.Target != (row.Target == chat.TargetBelow) {
			t.Errorf("row %d: %+v vs %+v", i, got, row)
		}
		for _, r := range chat.Roles {
			if got.Roles[string(r)] != chat.Allowed(r, row.Action) {
				t.Errorf("%s/%s: %v", row.Action, r, got.Roles[string(r)])
			}
		}
	}
}
