package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
)

// TestModLogOverHTTP: the moderation log with cursors, a user's recent
// messages and a purge, for the channel's moderators only, with their
// bounds and error bodies.
func TestModLogOverHTTP(t *testing.T) {
	engines(t, func(t *testing.T, e engine) {
		s := newStack(t, e, stackOptions{})
		_, mod := s.user(chat.RoleModerator)
		v, viewer := s.user(chat.RoleViewer)
		_, other := s.user(chat.RoleViewer)
		var ids []int64
		for i := range 3 {
			ids = append(ids, s.send(viewer, "room", fmt.Sprintf("line %d", i)).ID)
			s.send(other, "room", fmt.Sprintf("other %d", i))
		}
		s.must(200, "DELETE", fmt.Sprintf("/api/v1/messages/%d?channel=room", ids[0]), mod, nil, nil)
		s.must(200, "POST", "/api/v1/users/"+v.ID+"/timeout", mod, map[string]any{"seconds": 1, "reason": "easy", "channel": "room"}, nil)

		// A user's recent messages: newest first, tombstones left out.
		var um httpapi.UserMessages
		s.must(200, "GET", "/api/v1/channels/room/users/"+v.ID+"/messages", mod, nil, &um)
		if len(um.Messages) != 2 || um.Messages[0].ID != ids[2] || um.Messages[1].ID != ids[1] {
			t.Fatalf("user messages = %+v", um)
		}
		errorBody(t, s.call("GET", "/api/v1/channels/room/users/"+v.ID+"/messages", viewer, nil), 403)
		errorBody(t, s.call("GET", "/api/v1/channels/room/users/"+v.ID+"/messages?limit=101", mod, nil), 400)
		errorBody(t, s.call("GET", "/api/v1/channels/room/users/"+v.ID+"/messages", "", nil), 401)

		// Purge: 200 with the count; the reason is bounded.
		b := errorBody(t, s.call("POST", "/api/v1/channels/room/users/"+v.ID+"/purge", mod, map[string]any{"reason": strings.Repeat("x", 501)}), 400)
		if d, _ := b["details"].([]any); len(d) != 1 || d[0].(map[string]any)["field"] != "body.reason" {
			t.Fatalf("bad reason = %v", b)
		}
		errorBody(t, s.call("POST", "/api/v1/channels/room/users/"+v.ID+"/purge", viewer, nil), 403)
		errorBody(t, s.call("POST", "/api/v1/channels/room/users/nobody/purge", mod, nil), 404)
		var pr httpapi.PurgeResult
		s.must(200, "POST", "/api/v1/channels/room/users/"+v.ID+"/purge", mod, map[string]any{"reason": "raid"}, &pr)
		if pr.Deleted != 2 {
			t.Fatalf("purge = %+v", pr)
		}
		s.must(200, "POST", "/api/v1/channels/room/users/"+v.ID+"/purge", mod, nil, &pr)
		if pr.Deleted != 0 {
			t.Fatalf("second purge = %+v", pr)
		}
		for _, m := range s.messages("?channel=room") {
			if (m.User.ID == v.ID) != m.Deleted {
				t.Fatalf("after the purge: %+v", m)
			}
		}

		// The log, page by page.
		var all []httpapi.ModEntry
		before := ""
		for range 10 {
			var p httpapi.ModLogPage
			s.must(200, "GET", "/api/v1/channels/room/modlog?limit=1"+before, mod, nil, &p)
			all = append(all, p.Entries...)
			if p.Next == "" {
				break
			}
			before = "&before=" + p.Next
		}
		want := []string{"purge", "purge", "timeout", "delete_message"}
		if len(all) != len(want) {
			t.Fatalf("log = %+v", all)
		}
		for i, e := range all {
			if e.Action != want[i] || e.Channel != "room" || e.Actor.Role != "moderator" || e.Target == nil || e.Target.ID != v.ID {
				t.Fatalf("entry %d = %+v, want %s", i, e, want[i])
			}
		}
		if all[1].Count != 2 || all[1].Reason != "raid" || all[3].MessageID != ids[0] || all[2].Until == nil {
			t.Fatalf("log = %+v", all)
		}
		errorBody(t, s.call("GET", "/api/v1/channels/room/modlog", viewer, nil), 403)
		for _, q := range []string{"?limit=0", "?limit=201", "?before=x", "?before=1-2-3"} {
			errorBody(t, s.call("GET", "/api/v1/channels/room/modlog"+q, mod, nil), 400)
		}
		var empty httpapi.ModLogPage
		s.must(200, "GET", "/api/v1/channels/quiet/modlog", mod, nil, &empty)
		if len(empty.Entries) != 0 || empty.Next != "" || !strings.Contains(string(s.call("GET", "/api/v1/channels/quiet/modlog", mod, nil).Raw), `"entries":[]`) {
			t.Fatalf("empty log = %+v", empty)
		}
	})
}
