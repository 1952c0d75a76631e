package pgarchive_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/pgtest"

	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/pgarchive"
)

func open(t *testing.T) *pgarchive.Archive {
	t.Helper()
	pg := pgtest.Start(t)
	a, err := pgarchive.Open(context.Background(), pg.CreateDB(t, "chat"), pgarchive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestMigrateOnceAcrossReplicas: replicas migrating at once apply each
// migration once (the advisory lock), and migrating again does nothing.
func TestMigrateOnceAcrossReplicas(t *testing.T) {
	a := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	applied := make([][]int64, 4)
	errs := make([]error, 4)
	for i := range applied {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = a.Migrate(ctx)
		}()
	}
	wg.Wait()
	total := 0
	for i := range applied {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += len(applied[i])
	}
	if total != 1 {
		t.Fatalf("migrations applied %v in all, want version 1 once", applied)
	}
	if again, err := a.Migrate(ctx); err != nil || len(again) != 0 {
		t.Fatalf("migrating again: %v %v", again, err)
	}
}

// TestRetentionDropsWholeDays: partitions whose whole day is older than
// the retention go, with their rows; younger ones stay.
func TestRetentionDropsWholeDays(t *testing.T) {
	a := open(t)
	ctx := context.Background()
	if _, err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	msg := func(id int64, at time.Time) chat.Event {
		return chat.Event{Type: chat.EventMessage, Cursor: chat.Cursor{ID: id}, Message: &chat.Message{ID: id, Channel: "old", Text: "text", CreatedAt: at, User: chat.UserRef{ID: "u1", Name: "one", Role: chat.RoleViewer}}}
	}
	batch := chat.ArchiveBatch{Channel: "old", Events: []chat.Event{
		msg(1, now.AddDate(0, 0, -100)), msg(2, now.AddDate(0, 0, -61)), msg(3, now.AddDate(0, 0, -59)), msg(4, now),
	}}
	if err := a.ArchiveWrite(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := a.ArchiveWrite(ctx, batch); err != nil { // again: nothing changes
		t.Fatal(err)
	}
	dropped, err := a.DropExpired(ctx, now, 60*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 6 {
		t.Fatalf("dropped %v, want the two old days of each of the 3 tables", dropped)
	}
	ms, err := a.ArchiveMessages(ctx, "old", chat.Page{FromStart: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].ID != 3 || ms[1].ID != 4 {
		t.Fatalf("after retention: %+v, want messages 3 and 4", ms)
	}
	if again, err := a.DropExpired(ctx, now, 60*24*time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("dropping again: %v %v", again, err)
	}
	// A message of a dropped day archived again (a late batch) gets its
	// day's partition back and is kept until the next run.
	if err := a.ArchiveWrite(ctx, chat.ArchiveBatch{Channel: "old", Events: []chat.Event{msg(1, now.AddDate(0, 0, -100))}}); err != nil {
		t.Fatal(err)
	}
}
