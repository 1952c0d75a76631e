package realtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/services/chat/internal/chat"
)

// TestBrowserBroadcasterNamesAndRemovesModerators: the broadcaster of #general names a
// viewer moderator from the viewer's message ("make mod") and removes them from the
// moderators list, through the roles API; a moderator's page has no such controls.
func TestBrowserBroadcasterNamesAndRemovesModerators(t *testing.T) {
	r := startReplica(t, replicaConfig{publicRead: true, register: withAPI(t)}, testPrefix())
	ctx := context.Background()
	bea, beaToken := r.user(chat.RoleViewer, "bea")
	if _, err := r.svc.SetChannelRole(ctx, r.admin, "general", bea.ID, chat.RoleBroadcaster); err != nil {
		t.Fatal(err)
	}
	vic, _ := r.user(chat.RoleViewer, "vic")
	res, err := r.svc.Send(ctx, chat.Held(vic), chat.SendInput{Channel: "general", Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	line := `#messages li[data-id="` + strconv.FormatInt(res.Message.ID, 10) + `"]`
	role := func() chat.Role {
		t.Helper()
		m, err := r.svc.Member(ctx, vic, "general")
		if err != nil {
			t.Fatal(err)
		}
		return m.Role()
	}

	browser := browsertest.New(t, 90*time.Second)
	tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate(r.base+"/#channel=general&token="+beaToken)); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	waitJS(t, tab, `document.querySelector('#who').textContent === "as bea (broadcaster in #general)"`)
	waitJS(t, tab, `document.querySelector('#mods') !== null && !document.querySelector('#mods-empty').hidden`)
	waitJS(t, tab, `document.querySelector('`+line+` button[data-act="mod"]') !== null`)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(line+` button[data-act="mod"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `[...document.querySelectorAll('#mods li .name')].some(e => e.textContent === 'vic') && document.querySelector('#mods-empty').hidden`)
	if got := role(); got != chat.RoleModerator {
		t.Fatalf("vic's role in #general after make mod: %s", got)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#mods li[data-user="`+vic.ID+`"] button[data-unmod]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.querySelectorAll('#mods li').length === 0 && !document.querySelector('#mods-empty').hidden`)
	if got := role(); got != chat.RoleViewer {
		t.Fatalf("vic's role in #general after remove: %s", got)
	}

	// A moderator moderates messages but names nobody.
	mona, monaToken := r.user(chat.RoleViewer, "mona")
	if _, err := r.svc.SetChannelRole(ctx, r.admin, "general", mona.ID, chat.RoleModerator); err != nil {
		t.Fatal(err)
	}
	modTab, cancelMod := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelMod)
	if err := chromedp.Do(modTab, chromedp.Navigate(r.base+"/#channel=general&token="+monaToken)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, modTab, `document.querySelector('`+line+` button[data-act="timeout"]') !== null`)
	if n, err := chromedp.Run(modTab, chromedp.Evaluate[int](`document.querySelectorAll('#mods, button[data-act="mod"], button[data-unmod]').length`)); err != nil || n != 0 {
		t.Fatalf("a moderator's page has %d moderator-naming controls (%v)", n, err)
	}
}
