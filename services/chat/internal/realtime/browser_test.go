package realtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/web"
)

// withAPI registers the REST API and the browser client, as cmd/chat
// does, so the page can be loaded and load history.
func withAPI(t *testing.T) func(*apiserver.Server[chat.User], *chat.Service) {
	return func(srv *apiserver.Server[chat.User], svc *chat.Service) {
		if _, err := httpapi.Register(srv, svc); err != nil {
			t.Fatal(err)
		}
		web.Mount(srv.Instance(), web.Options{})
	}
}

// TestBrowserPagesOnTwoReplicasExchangeMessages drives the embedded client
// in headless Chromium: two pages, each on its own replica of one Redis,
// load history, exchange messages, see a bot reply marked, see a deleted
// message disappear and count each other in presence.
func TestBrowserPagesOnTwoReplicasExchangeMessages(t *testing.T) {
	rs := redisServer(t)
	a, b := twoReplicas(t, replicaConfig{redisURL: rs.URL(), publicRead: true, register: withAPI(t),
		opts: realtime.Options{PresenceDebounce: 50 * time.Millisecond}})
	ctx := context.Background()
	if _, err := a.svc.Send(ctx, chat.Held(a.admin), chat.SendInput{Message: "from before the pages opened"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.svc.CreateCommand(ctx, a.admin, chat.CommandInput{Command: "!so", Response: "go follow ${touser}!"}); err != nil {
		t.Fatal(err)
	}
	_, aliceToken := a.user(chat.RoleViewer, "alice")
	_, bobToken := a.user(chat.RoleSubscriber, "bob")

	browser := browsertest.New(t, 120*time.Second)
	tab1 := browsertest.NewTab(t, browser)
	tab2 := browsertest.NewTab(t, browser)
	open := func(tab context.Context, base, token string) {
		t.Helper()
		err := chromedp.Do(tab,
			chromedp.Navigate(base+"/#general"),
			chromedp.WaitVisible(chromedp.CSS(`#messages li`)),
			chromedp.SendKeys(chromedp.CSS(`#token`), token),
			chromedp.Click(chromedp.CSS(`#save-token`)),
		)
		if err != nil {
			t.Fatalf("open %s: %v", base, err)
		}
		waitJS(t, tab, `document.querySelector('#who').textContent.startsWith('as ')`)
	}
	open(tab1, a.base, aliceToken)
	open(tab2, b.base, bobToken)
	waitJS(t, tab1, `document.querySelector('#messages').innerText.includes('from before the pages opened')`)

	say := func(tab context.Context, text string) {
		t.Helper()
		if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`#message`), text), chromedp.Click(chromedp.CSS(`#send`))); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	say(tab1, "hi bob, alice here")
	waitJS(t, tab2, `document.querySelector('#messages').innerText.includes('hi bob, alice here')`)
	say(tab2, "!so alice")
	waitJS(t, tab1, `[...document.querySelectorAll('#messages li.bot')].some(li => li.innerText.includes('go follow alice!'))`)
	waitJS(t, tab2, `document.querySelector('#presence').textContent === '2 online'`)
	waitJS(t, tab1, `document.querySelector('#presence').textContent === '2 online'`)

	// A moderator deletes alice's line: it disappears from both pages.
	ms, err := a.svc.Messages(ctx, nil, "general", chat.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	for _, m := range ms {
		if m.Text == "hi bob, alice here" {
			id = m.ID
		}
	}
	if _, err := b.svc.DeleteMessage(ctx, b.admin, "general", id); err != nil {
		t.Fatal(err)
	}
	for _, tab := range []context.Context{tab1, tab2} {
		waitJS(t, tab, `!document.querySelector('#messages').innerText.includes('hi bob, alice here')`)
	}
	say(tab1, "still here after the deletion")
	waitJS(t, tab2, `document.querySelector('#messages').innerText.includes('still here after the deletion')`)

	if dir := os.Getenv("TEST_ARTIFACTS"); dir != "" {
		png, err := chromedp.Run(tab2, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "chat-two-replicas.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserReconnectsWithSinceAfterADrop: the page's socket drops,
// messages are sent meanwhile, and the page reconnects with since= and
// shows what it missed, in order, once.
func TestBrowserReconnectsWithSinceAfterADrop(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, register: withAPI(t)}, testPrefix())
	browser := browsertest.New(t, 90*time.Second)
	tab := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(r.base+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.querySelector('#status').textContent === 'live'`)
	ctx := context.Background()
	if _, err := r.svc.Send(ctx, chat.Held(r.admin), chat.SendInput{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.querySelectorAll('#messages li').length === 1`)
	// Drop the socket from the page's side, send meanwhile, let it reconnect.
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(state.sub.ws.close(4999), true)`)); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"two", "three"} {
		if _, err := r.svc.Send(ctx, chat.Held(r.admin), chat.SendInput{Message: text}); err != nil {
			t.Fatal(err)
		}
	}
	waitJS(t, tab, `document.querySelectorAll('#messages li').length === 3`)
	got, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#messages li .text')].map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "one" || got[1] != "two" || got[2] != "three" {
		t.Fatalf("page shows %q", got)
	}
}

// TestBrowserWithATokenGetsInWhenAnonymousSocketsAreFull: anonymous
// sockets hold their whole share of the replica; the page is refused until
// a token is saved, then offers it in the handshake and gets in (its auth
// frame, sent after the upgrade, would have come too late).
func TestBrowserWithATokenGetsInWhenAnonymousSocketsAreFull(t *testing.T) {
	limits := realtime.Limits{MaxSockets: 4, UserReservePercent: 50}
	r := startReplica(t, replicaConfig{publicRead: true, register: withAPI(t), opts: realtime.Options{Limits: &limits}}, testPrefix())
	_, tok := r.user(chat.RoleViewer, "carol")
	for i := 0; i < 2; i++ {
		dial(t, r.base, "channel=general", nil).hello()
	}
	browser := browsertest.New(t, 90*time.Second)
	tab := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(r.base+"/#general")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.querySelector('#status').textContent.startsWith('reconnecting')`)
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`#token`), tok), chromedp.Click(chromedp.CSS(`#save-token`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.querySelector('#status').textContent === 'live' && document.querySelector('#who').textContent.startsWith('as ')`)
	if n := r.hub.Connections(); n != 3 {
		t.Fatalf("%d sockets, want the 2 anonymous ones and the page's", n)
	}
}

func waitJS(t *testing.T, tab context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}
