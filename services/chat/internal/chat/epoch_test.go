package chat_test

import (
	"fmt"
	"testing"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// testEpochs: every event's cursor carries its entry's epoch; a reader
// resumes after a cursor with its epoch, and is told the history is gone
// for a cursor whose epoch is not the entry's, or one past the log's end
// (since=<head>-1 is no place in the log).
func testEpochs(t *testing.T, e engine) {
	en := newEnv(t, e, 1000, true)
	v, mod := en.users[chat.RoleViewer], en.users[chat.RoleModerator]
	for i := 1; i <= 5; i++ {
		en.send(v, fmt.Sprintf("m%d", i))
	}
	must[chat.Message](t)(en.svc.DeleteMessage(en.ctx, mod, "", 2)) // an event: 5-1
	evs := must[[]chat.Event](t)(en.store.ReadEvents(en.ctx, "general", chat.Cursor{}, 100))
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6", len(evs))
	}
	for _, ev := range evs {
		if ev.Cursor.Epoch == 0 {
			t.Fatalf("event %s has no epoch", ev.Cursor)
		}
	}
	head := must[chat.Cursor](t)(en.store.Head(en.ctx, "general"))
	if head != evs[5].Cursor {
		t.Fatalf("head %s, want the last event's cursor %s", head, evs[5].Cursor)
	}
	after := func(c chat.Cursor) ([]chat.Event, error) {
		return en.store.ReadEvents(en.ctx, "general", c, 100)
	}
	if got := must[[]chat.Event](t)(after(evs[2].Cursor)); len(got) != 3 || got[0].Cursor != evs[3].Cursor {
		t.Fatalf("after %s: %d events", evs[2].Cursor, len(got))
	}
	if got := must[[]chat.Event](t)(after(chat.Cursor{ID: 3})); len(got) != 3 {
		t.Fatalf("after a bare id: %d events, want 3 (not checked)", len(got))
	}
	if got := must[[]chat.Event](t)(after(head)); len(got) != 0 {
		t.Fatalf("after the head: %d events", len(got))
	}
	other := evs[2].Cursor
	other.Epoch ^= 0x5a5a
	beyond := head
	beyond.Seq++
	beyond.Epoch = 0
	for name, c := range map[string]chat.Cursor{"another epoch": other, "past the head": beyond, "past the last id": {ID: 6}} {
		_, err := after(c)
		wantKind(t, err, chat.KindHistoryGone)
		if ok := must[bool](t)(en.store.Recoverable(en.ctx, "general", c)); ok {
			t.Errorf("%s (%s): recoverable", name, c)
		}
	}
	if ok := must[bool](t)(en.store.Recoverable(en.ctx, "general", evs[2].Cursor)); !ok {
		t.Errorf("%s: not recoverable", evs[2].Cursor)
	}
}

// testEventsAloneAreTrimmed: a channel that gets moderation events and no
// messages keeps at most twice its history in entries; a reader from
// before what was dropped is told the history is gone, one after it reads
// the rest.
func testEventsAloneAreTrimmed(t *testing.T, e engine) {
	const history = 3
	en := newEnv(t, e, history, true)
	mod, v := en.users[chat.RoleModerator], en.users[chat.RoleViewer]
	for i := 0; i < 10; i++ {
		must[chat.Member](t)(en.svc.Timeout(en.ctx, mod, v.ID, chat.TimeoutInput{Seconds: 60 + i, Channel: "quiet"}))
	}
	head := must[chat.Cursor](t)(en.store.Head(en.ctx, "quiet"))
	if head.ID != 0 || head.Seq != 10 {
		t.Fatalf("head %s, want the tenth event after no message", head)
	}
	_, err := en.store.ReadEvents(en.ctx, "quiet", chat.Cursor{}, 100)
	wantKind(t, err, chat.KindHistoryGone)
	kept := must[[]chat.Event](t)(en.store.ReadEvents(en.ctx, "quiet", chat.Cursor{Seq: 10 - 2*history}, 100))
	if len(kept) != 2*history || kept[len(kept)-1].Cursor != head {
		t.Fatalf("%d events kept after 0-%d, want %d up to the head", len(kept), 10-2*history, 2*history)
	}
	// A message still trims by the history as before.
	sub := en.users[chat.RoleSubscriber] // not timed out
	for i := 0; i < history+1; i++ {
		en.send(sub, fmt.Sprintf("m%d", i))
	}
	ms := must[[]chat.Message](t)(en.svc.Messages(en.ctx, nil, "", chat.Page{}))
	if len(ms) != history {
		t.Fatalf("%d messages kept, want %d", len(ms), history)
	}
}
