package realtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/realtime"
)

// xss is a message that would run script if a page inserted it as HTML.
const xss = `<img src=x onerror="window.__xss=1">`

// TestBrowserModeratorActsFromThePage drives the page in two headless
// Chromium browser contexts (separate storage) on two replicas of one
// Redis: a moderator of #general (a role given in the channel) and a
// viewer. The moderator deletes, times out and bans from a message's
// buttons, edits the channel's modes, approves the viewer's held message
// and flips the shield switch; each effect reaches the viewer's page. The
// moderator's mod log panel pages to older entries and shows the timeout
// and the purge of the viewer; the purged messages leave the viewer's
// page. The viewer's page has no moderation controls (nor the log), its
// API calls are refused, and markup in a message is shown as text in the
// review queue and the chat.
func TestBrowserModeratorActsFromThePage(t *testing.T) {
	rs := redisServer(t)
	a, b := twoReplicas(t, replicaConfig{redisURL: rs.URL(), publicRead: true, register: withAPI(t),
		opts: realtime.Options{PresenceDebounce: 50 * time.Millisecond}})
	ctx := context.Background()
	mod, modToken := a.user(chat.RoleViewer, "mona")
	if _, err := a.svc.SetChannelRole(ctx, a.admin, "general", mod.ID, chat.RoleModerator); err != nil {
		t.Fatal(err)
	}
	vic, vicToken := a.user(chat.RoleViewer, "vic")
	trollA, _ := a.user(chat.RoleViewer, "troll_a")
	trollB, _ := a.user(chat.RoleViewer, "troll_b")
	// 50 role changes: with mona's, one more entry than the panel's first
	// page holds.
	for i := 0; i < 25; i++ {
		for _, r := range []chat.Role{chat.RoleVIP, chat.RoleViewer} {
			if _, err := a.svc.SetChannelRole(ctx, a.admin, "general", trollB.ID, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	send := func(u chat.User, text string) int64 {
		t.Helper()
		res, err := a.svc.Send(ctx, chat.Held(u), chat.SendInput{Channel: "general", Message: text})
		if err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
		return res.Message.ID
	}
	toDelete := send(trollA, "delete me")
	toTimeout := send(trollA, "time me out")
	toBan := send(trollB, "ban me")
	line := func(id int64) string { return `#messages li[data-id="` + strconv.FormatInt(id, 10) + `"]` }

	browser := browsertest.New(t, 180*time.Second)
	newBrowser := func() context.Context {
		t.Helper()
		tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		if err := chromedp.Do(tab); err != nil {
			t.Fatalf("open a browser context: %v", err)
		}
		return tab
	}
	modTab, vicTab := newBrowser(), newBrowser()
	open := func(tab context.Context, base, token, who string) {
		t.Helper()
		if err := chromedp.Do(tab, chromedp.Navigate(base+"/#channel=general&token="+token)); err != nil {
			t.Fatalf("open %s: %v", base, err)
		}
		waitJS(t, tab, `document.querySelector('#who').textContent === `+strconv.Quote(who))
		waitJS(t, tab, `document.querySelectorAll('#messages li[data-id]').length === 3`)
	}
	open(modTab, a.base, modToken, "as mona (moderator in #general)")
	open(vicTab, b.base, vicToken, "as vic (viewer in #general)")
	click := func(tab context.Context, sel string) {
		t.Helper()
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}

	// The viewer's page builds no control at all, and the API refuses one
	// called by hand.
	waitJS(t, modTab, `document.querySelector('#modes-form') !== null && !document.querySelector('#moderation').hidden`)
	none := `document.querySelectorAll('#moderation *, .mod-actions, button[data-act], button[data-held], #shield-switch, #modes-form, #modlog, #modlog-list').length === 0 && document.querySelector('#moderation').hidden`
	if ok, err := chromedp.Run(vicTab, chromedp.Evaluate[bool](none)); err != nil || !ok {
		html, _ := chromedp.Run(vicTab, chromedp.Evaluate[string](`document.body.outerHTML`))
		t.Fatalf("the viewer's page has moderation controls (%v):\n%s", err, html)
	}
	refused, err := chromedp.Run(vicTab, chromedp.Evaluate[string](fmt.Sprintf(
		`api("DELETE", "messages/%d?channel=general").then(() => "deleted", (e) => e.message)`, toDelete), chromedp.EvalAwaitPromise))
	if err != nil || refused == "deleted" {
		t.Fatalf("the viewer deleted a message by hand: %q %v", refused, err)
	}

	// The mod log panel: the newest 50 entries, then "older" reads the
	// last one (mona's role) and goes.
	waitJS(t, modTab, `document.querySelectorAll('#modlog-list li').length === 50 && !document.querySelector('#modlog-older').hidden`)
	click(modTab, `#modlog-older`)
	waitJS(t, modTab, `document.querySelectorAll('#modlog-list li').length === 51 && document.querySelector('#modlog-older').hidden`)
	if ok, err := chromedp.Run(modTab, chromedp.Evaluate[bool](`(() => { const li = document.querySelector('#modlog-list li:last-child');
		return li.dataset.action === 'role_set' && li.querySelector('.target').textContent === 'mona'; })()`)); err != nil || !ok {
		t.Fatalf("the oldest entry shown is not mona's role (%v)", err)
	}

	// Delete: the line leaves the viewer's page.
	click(modTab, line(toDelete)+` button[data-act="delete"]`)
	waitJS(t, vicTab, `document.querySelector('`+line(toDelete)+`') === null`)
	waitJS(t, modTab, `document.querySelector('`+line(toDelete)+`') === null`)

	// Timeout for the length chosen in the panel: announced on the
	// viewer's page, and it holds for that length.
	if err := chromedp.Do(modTab, chromedp.SetValue(chromedp.CSS(`#timeout-seconds`), "3600"),
		chromedp.SendKeys(chromedp.CSS(`#mod-reason`), "spam")); err != nil {
		t.Fatal(err)
	}
	click(modTab, line(toTimeout)+` button[data-act="timeout"]`)
	waitJS(t, vicTab, `[...document.querySelectorAll('#messages li.notice')].some(li => li.textContent === 'troll_a was timed out by mona: spam')`)
	m, err := b.svc.Member(ctx, trollA, "general")
	if err != nil {
		t.Fatal(err)
	}
	if until := m.Standing.TimedOutUntil; until == nil || time.Until(*until) < 55*time.Minute || time.Until(*until) > 61*time.Minute {
		t.Fatalf("troll_a's standing in #general: %+v, want a timeout of an hour", m.Standing)
	}

	// Ban takes two clicks: the first only arms the button.
	banBtn := line(toBan) + ` button[data-act="ban"]`
	click(modTab, banBtn)
	waitJS(t, modTab, `document.querySelector('`+banBtn+`').textContent === 'ban troll_b?'`)
	if m, err := b.svc.Member(ctx, trollB, "general"); err != nil || m.Standing.Banned {
		t.Fatalf("one click banned: %+v %v", m.Standing, err)
	}
	click(modTab, banBtn)
	waitJS(t, vicTab, `[...document.querySelectorAll('#messages li.notice')].some(li => li.textContent === 'troll_b was banned by mona: spam')`)
	if m, err := b.svc.Member(ctx, trollB, "general"); err != nil || !m.Standing.Banned {
		t.Fatalf("troll_b's standing in #general: %+v %v, want banned", m.Standing, err)
	}

	// Modes: first-message review and unique chat on.
	click(modTab, `#mode-first`)
	click(modTab, `#mode-unique`)
	click(modTab, `#modes-save`)
	waitJS(t, modTab, `document.querySelector('#modes-status').textContent === 'saved'`)
	ch, err := b.svc.Channel(ctx, nil, "general")
	if err != nil {
		t.Fatal(err)
	}
	if !ch.FirstMessageReview || !ch.UniqueChat || ch.AutoShield || ch.SlowModeSeconds != 0 || ch.MinAccountAgeSeconds != 0 {
		t.Fatalf("channel after saving the modes: %+v", ch)
	}

	// The viewer's first message is held: pending on their page only, in
	// the moderator's queue as text; approved, it reaches the viewer's
	// page as text.
	if err := chromedp.Do(vicTab, chromedp.SendKeys(chromedp.CSS(`#message`), xss), chromedp.Click(chromedp.CSS(`#send`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, vicTab, `[...document.querySelectorAll('#messages li.pending .text')].some(e => e.textContent === `+strconv.Quote(xss)+`)`)
	waitJS(t, modTab, `[...document.querySelectorAll('#held li .text')].some(e => e.textContent === `+strconv.Quote(xss)+`)`)
	if n, err := chromedp.Run(modTab, chromedp.Evaluate[int](`document.querySelectorAll('#messages li.pending').length`)); err != nil || n != 0 {
		t.Fatalf("the moderator's chat shows %d pending lines (%v): only the sender sees one", n, err)
	}
	click(modTab, `#held li button[data-held="approve"]`)
	waitJS(t, modTab, `document.querySelectorAll('#held li').length === 0`)
	for _, tab := range []context.Context{vicTab, modTab} {
		waitJS(t, tab, `[...document.querySelectorAll('#messages li[data-id] .text')].some(e => e.textContent === `+strconv.Quote(xss)+`)`)
	}
	waitJS(t, vicTab, `document.querySelectorAll('#messages li.pending').length === 0`)
	for _, tab := range []context.Context{vicTab, modTab} {
		if ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector('img') === null && window.__xss === undefined`)); err != nil || !ok {
			t.Fatalf("a message's markup became an element (%v)", err)
		}
	}

	// Shield: the switch turns it on and off; both pages show it.
	badge := func(on bool) string {
		return `document.querySelector('#shield-badge').hidden === ` + strconv.FormatBool(!on)
	}
	for _, tab := range []context.Context{vicTab, modTab} {
		waitJS(t, tab, badge(false))
	}
	click(modTab, `#shield-switch`)
	for _, tab := range []context.Context{vicTab, modTab} {
		waitJS(t, tab, badge(true))
	}
	waitJS(t, modTab, `document.querySelector('#shield-switch').checked`)
	if dir := os.Getenv("TEST_ARTIFACTS"); dir != "" {
		for name, tab := range map[string]context.Context{"chat-moderator.png": modTab, "chat-viewer.png": vicTab} {
			png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ch, err := b.svc.Channel(ctx, nil, "general"); err != nil || !ch.Shield {
		t.Fatalf("shield after the switch: %+v %v", ch, err)
	}
	click(modTab, `#shield-switch`)
	for _, tab := range []context.Context{vicTab, modTab} {
		waitJS(t, tab, badge(false))
	}

	// Timeout and purge of the viewer: both in the mod log panel (the
	// page's own action, and the events), the purged lines leave both
	// pages; the purge takes two clicks.
	v1 := send(vic, "vic one")
	v2 := send(vic, "vic two")
	waitJS(t, modTab, `document.querySelector('`+line(v2)+` button[data-act="purge"]') !== null`)
	waitJS(t, vicTab, `document.querySelector('`+line(v2)+`') !== null`)
	click(modTab, line(v1)+` button[data-act="timeout"]`)
	logHas := func(action, actor, target string) string {
		return `[...document.querySelectorAll('#modlog-list li[data-action="` + action + `"]')].some(li => li.querySelector('.actor').textContent === ` +
			strconv.Quote(actor) + ` && li.querySelector('.target').textContent === ` + strconv.Quote(target) + `)`
	}
	waitJS(t, modTab, logHas("timeout", "mona", "vic"))
	purgeBtn := line(v2) + ` button[data-act="purge"]`
	click(modTab, purgeBtn)
	waitJS(t, modTab, `document.querySelector('`+purgeBtn+`').textContent === 'purge vic?'`)
	click(modTab, purgeBtn)
	vicLines := `[...document.querySelectorAll('#messages li[data-id] .user')].filter(e => e.textContent === 'vic').length`
	for _, tab := range []context.Context{vicTab, modTab} {
		waitJS(t, tab, vicLines+` === 0`)
	}
	waitJS(t, modTab, logHas("purge", "mona", "vic")+` && document.querySelector('#modlog-list li[data-action="purge"] .detail').textContent === '3 messages'`)
	// An action taken elsewhere reaches the panel by its event.
	if _, err := b.svc.Timeout(ctx, b.admin, trollA.ID, chat.TimeoutInput{Seconds: 60, Channel: "general"}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, modTab, logHas("timeout", b.admin.Name, "troll_a"))
	if ok, err := chromedp.Run(vicTab, chromedp.Evaluate[bool](none)); err != nil || !ok {
		t.Fatalf("the viewer's page has moderation controls after the purge (%v)", err)
	}

	// The role was given in #general only: in another channel the
	// moderator's page is a viewer's.
	if _, err := a.svc.Send(ctx, chat.Held(trollA), chat.SendInput{Channel: "other", Message: "in other"}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(modTab, chromedp.SetValue(chromedp.CSS(`#channel`), "other"), chromedp.Click(chromedp.CSS(`#join`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, modTab, `document.querySelector('#who').textContent === 'as mona (viewer in #other)'`)
	waitJS(t, modTab, `document.querySelectorAll('#messages li[data-id]').length === 1`)
	if ok, err := chromedp.Run(modTab, chromedp.Evaluate[bool](none)); err != nil || !ok {
		t.Fatalf("the moderator of #general has controls in #other (%v)", err)
	}
}
