package realtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestBrowserShowsTimesInTheReadersZone: a timed-out viewer's send is refused with the
// server's message, "you are timed out until <UTC RFC 3339>"; the page shows that time in
// the browser's own zone and format (here New York's), never the raw UTC stamp.
func TestBrowserShowsTimesInTheReadersZone(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, register: withAPI(t)}, testPrefix())
	ctx := context.Background()
	vic, token := r.user(chat.RoleViewer, "vic")
	m, err := r.svc.Timeout(ctx, r.admin, vic.ID, chat.TimeoutInput{Seconds: 7200, Channel: "general"})
	if err != nil {
		t.Fatal(err)
	}
	until := m.Standing.TimedOutUntil.UTC().Format(time.RFC3339)

	browser := browsertest.New(t, 90*time.Second)
	tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	if _, err := chromedp.Call(tab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"}); err != nil {
		t.Fatalf("set the browser's time zone: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(r.base+"/#channel=general&token="+token)); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitJS(t, tab, `document.querySelector('#who').textContent.startsWith('as vic')`)
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`#message`), "hello?"), chromedp.Click(chromedp.CSS(`#send`))); err != nil {
		t.Fatal(err)
	}
	want := `"you are timed out until " + new Date(` + strconv.Quote(until) + `).toLocaleString()`
	waitJS(t, tab, `document.querySelector('#error').textContent !== ''`)
	got, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector('#error').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	wantText, err := chromedp.Run(tab, chromedp.Evaluate[string](want))
	if err != nil {
		t.Fatal(err)
	}
	if got != wantText || got == "you are timed out until "+until {
		t.Fatalf("the page says %q, want %q (the UTC time %s in the reader's zone)", got, wantText, until)
	}
}
