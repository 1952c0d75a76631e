package realtime_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/web"
)

// embedder serves a page of another origin that frames the chat page and
// hands it token by postMessage; what the chat page posts back is
// appended to #log.
func embedder(t *testing.T, chatBase, token string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><body><pre id="log"></pre>
<iframe id="f" src="%[1]s/#general" width="600" height="400"></iframe>
<script>
const f = document.getElementById("f");
window.addEventListener("message", (e) => {
  if (e.origin === %[1]q) document.getElementById("log").textContent += JSON.stringify(e.data) + "\n";
});
f.addEventListener("load", () => f.contentWindow.postMessage({type: "chat-token", token: %[2]q}, %[1]q));
</script></body>`, chatBase, token)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserPageSignsInWithPlatformToken drives the page in headless
// Chromium: a token in the URL fragment signs it in (and leaves the
// address), a token posted by an allowed embedding site signs the framed
// page in, and a site not in CHAT_EMBED_ORIGINS cannot frame it. The
// page shows the user's name and role.
func TestBrowserPageSignsInWithPlatformToken(t *testing.T) {
	v, err := jwtauth.New(jwtauth.Config{Secret: jwtSecret})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(sub, name string) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "name": name, "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwtSecret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The allowed embedder's address is known only once it listens, and
	// the chat page's only once the replica does: reserve the embedder's
	// listener first.
	allowed := httptest.NewUnstartedServer(nil)
	allowedOrigin := "http://" + allowed.Listener.Addr().String()
	r := startReplica(t, replicaConfig{publicRead: true, identities: v, register: func(srv *apiserver.Server[chat.User], svc *chat.Service) {
		if _, err := httpapi.Register(srv, svc); err != nil {
			t.Fatal(err)
		}
		web.Mount(srv.Instance(), web.Options{EmbedOrigins: []string{allowedOrigin}})
	}}, testPrefix())
	ctx := context.Background()
	// A moderator of #general (a viewer elsewhere) signs in by fragment: the
	// page shows the role it holds in its channel.
	frag := sign("frag-1", "Frag_User")
	if _, err := r.svc.Authenticate(ctx, frag); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetChannelRole(ctx, r.admin, "general", chat.PlatformUserID("frag-1"), chat.RoleModerator); err != nil {
		t.Fatal(err)
	}
	browser := browsertest.New(t, 120*time.Second)
	tab := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(r.base+"/#channel=general&token="+frag)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.querySelector('#who').textContent === 'as Frag_User (moderator in #general)'`)
	waitJS(t, tab, `location.hash === '#general' && !location.href.includes('token')`)

	// The embedding site hands the framed page its token.
	handler := embedder(t, r.base, sign("embed-1", "Embedded_User"))
	allowed.Config.Handler = handler.Config.Handler
	allowed.Start()
	t.Cleanup(allowed.Close)
	tab2 := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab2, chromedp.Navigate(allowed.URL)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab2, chromedp.Poll[bool](`document.querySelector('#log').textContent.includes('"name":"Embedded_User","role":"viewer"')`, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		log, _ := chromedp.Run(tab2, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		t.Fatalf("the embedded page did not sign in: %v\n%s", err, log)
	}

	// Another site may not frame the page, so it can hand it nothing.
	other := embedder(t, r.base, sign("evil-1", "Evil_User"))
	tab3 := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab3, chromedp.Navigate(other.URL)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	log, err := chromedp.Run(tab3, chromedp.Evaluate[string](`document.querySelector('#log').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log, "chat-signed-in") {
		t.Fatalf("a site not in CHAT_EMBED_ORIGINS signed the page in: %s", log)
	}
	if _, err := r.svc.User(ctx, r.admin, chat.PlatformUserID("evil-1")); chat.KindOf(err) != chat.KindNotFound {
		t.Fatalf("the refused site's user exists: %v", err)
	}
}
