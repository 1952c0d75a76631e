package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/apistack/platform/libs/apiserver/pgtest"
	"github.com/apistack/platform/libs/apiserver/redistest"
)

// TestFaultArchiveUnderLoad runs two replicas of the binary archiving into
// a real PostgreSQL under send load, and kills one replica (SIGKILL),
// pauses PostgreSQL (SIGSTOP to every backend: a hung database), resumes
// it and restarts it, all while sends go on. Sends never wait for the
// archive: they are acknowledged throughout; afterwards the archive holds
// exactly what Redis holds, each message once, and the surviving
// replica's lag metric is back under 2 s.
func TestFaultArchiveUnderLoad(t *testing.T) {
	rds := redistest.Start(t, "--appendonly", "yes")
	pg := pgtest.Start(t)
	dbURL := pg.CreateDB(t, "chat")
	a := startReplica(t, rds.URL(), "CHAT_DATABASE_URL="+dbURL)
	b := startReplica(t, rds.URL(), "CHAT_DATABASE_URL="+dbURL)
	l := startLoad([]*replica{a, b}, "archived", 4)
	l.waitAcks(t, 50, "before the kill")
	a.Kill()
	l.waitAcks(t, 50, "after the kill")
	pg.Pause()
	l.waitAcks(t, 100, "while PostgreSQL is paused")
	time.Sleep(3 * time.Second)
	l.waitAcks(t, 50, "still while PostgreSQL is paused")
	pg.Resume()
	l.waitAcks(t, 50, "after PostgreSQL resumed")
	pg.Restart()
	l.waitAcks(t, 50, "after PostgreSQL restarted")
	l.halt()
	hist := b.history(t, "archived")
	checkExactlyOnce(t, l, hist)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The killed replica's leases pass to b after their time to live
	// (10 s); then b catches up.
	deadline := time.Now().Add(60 * time.Second)
	var n int
	for {
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM chat_messages WHERE channel = 'archived'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= len(hist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the archive holds %d of the %d messages 60 s after the load stopped", n, len(hist))
		}
		time.Sleep(100 * time.Millisecond)
	}
	rows, err := conn.Query(ctx, "SELECT id, body FROM chat_messages WHERE channel = 'archived' ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID   int64
		Body string
	}
	archived, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(archived) != len(hist) {
		t.Fatalf("the archive holds %d rows, Redis %d messages", len(archived), len(hist))
	}
	for i, m := range hist {
		if archived[i].ID != m.ID || archived[i].Body != m.Text {
			t.Fatalf("archive row %d is %d %q, Redis has %d %q", i, archived[i].ID, archived[i].Body, m.ID, m.Text)
		}
	}
	// The lag metric follows: back under 2 s once caught up.
	lagRe := regexp.MustCompile(`(?m)^chat_archive_lag_seconds ([0-9.e+-]+)$`)
	deadline = time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(b.Base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := lagRe.FindSubmatch(body)
		if m == nil {
			t.Fatalf("no chat_archive_lag_seconds in /metrics:\n%s", body)
		}
		lag, _ := strconv.ParseFloat(string(m[1]), 64)
		if lag < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("archive lag %v s, 30 s after catching up", lag)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
