package realtime_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/browsertest"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/web"
)

// framingSite is a site of its own origin that frames the chat's embed: a red
// page holding one iframe at the top left. It reports in its title what
// the embed posts to it (chat-signed-in), and hands the iframe a token by
// postMessage when given one.
type framingSite struct {
	srv   *httptest.Server
	frame atomic.Value // the iframe's src
	token atomic.Value // posted to the frame once loaded ("" for none)
}

func startFramingSite(t *testing.T) *framingSite {
	e := &framingSite{}
	e.frame.Store("")
	e.token.Store("")
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := e.frame.Load().(string)
		origin := src[:strings.Index(src[len("http://"):], "/")+len("http://")]
		fmt.Fprintf(w, `<!doctype html><html><head><title>waiting</title></head>
<body style="margin:0;background:#ff0000">
<iframe id="f" src=%q style="position:absolute;left:0;top:0;width:600px;height:300px;border:0"></iframe>
<script>
const f = document.getElementById("f");
f.addEventListener("load", () => {
  document.title = "loaded";
  const tok = %q;
  if (tok) f.contentWindow.postMessage({type: "chat-token", token: tok}, %q);
});
window.addEventListener("message", (e) => {
  if (e.origin === %q && e.data && e.data.type === "chat-signed-in") document.title = "signed in as " + e.data.user.name;
});
</script></body></html>`, src, e.token.Load().(string), origin, origin)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// withEmbed registers the REST API and the browser side with origin
// allowed to frame the embed.
func withEmbed(t *testing.T, origin string) func(*apiserver.Server[chat.User], *chat.Service) {
	return func(srv *apiserver.Server[chat.User], svc *chat.Service) {
		if _, err := httpapi.Register(srv, svc); err != nil {
			t.Fatal(err)
		}
		web.Mount(srv.Instance(), web.Options{EmbedOrigins: []string{origin}})
	}
}

// pixels sorts the screenshot's pixels inside r: red (the framingSite's
// background showing through), and the rest (text, its shadow).
func pixels(t *testing.T, shot []byte, r image.Rectangle) (red, other int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr>>8 >= 250 && cg>>8 <= 5 && cb>>8 <= 5 {
				red++
			} else {
				other++
			}
		}
	}
	return red, other
}

func screenshot(t *testing.T, tab context.Context) []byte {
	t.Helper()
	b, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBrowserOverlayIsTransparentAndFades loads the overlay (?overlay=1)
// in an iframe over a red page, as OBS composes a browser source over a
// scene: where no message is, the red shows through (a transparent page,
// no input); a message shows as text pixels; after its fade time the red
// is back.
func TestBrowserOverlayIsTransparentAndFades(t *testing.T) {
	e := startFramingSite(t)
	r := startReplica(t, replicaConfig{publicRead: true, register: withEmbed(t, e.srv.URL)}, testPrefix())
	const fade = 3
	e.frame.Store(fmt.Sprintf("%s/embed/room?overlay=1&fade=%d", r.base, fade))
	browser := browsertest.New(t, 120*time.Second)
	tab := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(800, 400), chromedp.Navigate(e.srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.title === "loaded"`)
	frame := image.Rect(0, 0, 600, 300)
	// Loaded and connecting: nothing but red where the frame is.
	if red, other := pixels(t, screenshot(t, tab), frame); other != 0 {
		t.Fatalf("empty overlay: %d pixels not red of %d: the page is not transparent, or shows an input", other, red+other)
	}
	// Send until the overlay shows a message (the first may come before
	// its socket is open; the overlay shows what is said from then on).
	var shot []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "room", Message: "HELLO OVERLAY"}); err != nil {
			t.Fatal(err)
		}
		found := false
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			shot = screenshot(t, tab)
			if _, other := pixels(t, shot, frame); other > 0 {
				found = true
				break
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the overlay never showed a message")
		}
	}
	// Messages stack at the bottom: text pixels there, red above them.
	_, text := pixels(t, shot, image.Rect(0, 200, 600, 300))
	if text < 50 {
		t.Fatalf("only %d text pixels at the overlay's bottom", text)
	}
	if _, other := pixels(t, shot, image.Rect(0, 0, 600, 100)); other != 0 {
		t.Fatalf("%d pixels not red at the overlay's top, where no message is", other)
	}
	// Outside the frame the page is untouched.
	if _, other := pixels(t, shot, image.Rect(620, 0, 800, 400)); other != 0 {
		t.Fatalf("%d pixels not red outside the frame", other)
	}
	// After the fade time (and the last message's), red again.
	deadline = time.Now().Add(time.Duration(fade+10) * time.Second)
	for {
		time.Sleep(500 * time.Millisecond)
		if _, other := pixels(t, screenshot(t, tab), frame); other == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages still shown %d s after their fade time", fade+10)
		}
	}
}

// TestBrowserEmbedTakesItsTokenByPostMessage: a site of another origin
// frames /embed/{channel} and posts it a token; the embed signs in and
// tells the site. Opened on its own, the embed shows the history, takes a
// token posted by its own origin and sends.
func TestBrowserEmbedTakesItsTokenByPostMessage(t *testing.T) {
	e := startFramingSite(t)
	r := startReplica(t, replicaConfig{publicRead: true, register: withEmbed(t, e.srv.URL)}, testPrefix())
	_, tok := r.user(chat.RoleViewer, "embedded")
	e.frame.Store(r.base + "/embed/room")
	e.token.Store(tok)
	if _, err := r.svc.Send(context.Background(), chat.Held(r.admin), chat.SendInput{Channel: "room", Message: "before the embed"}); err != nil {
		t.Fatal(err)
	}
	browser := browsertest.New(t, 120*time.Second)
	tab := browsertest.NewTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, tab, `document.title === "signed in as embedded"`)

	own := browsertest.NewTab(t, browser)
	if err := chromedp.Do(own, chromedp.Navigate(r.base+"/embed/room")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, own, `[...document.querySelectorAll('#messages li .text')].some(e => e.textContent === "before the embed")`)
	if _, err := chromedp.Run(own, chromedp.Evaluate[bool](fmt.Sprintf(`(window.postMessage({type: "chat-token", token: %q}, location.origin), true)`, tok))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, own, `sessionStorage.getItem("chat.token") !== null`)
	if err := chromedp.Do(own, chromedp.SendKeys("#message", "from the embed"), chromedp.Click("#send")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, own, `[...document.querySelectorAll('#messages li')].some(e => e.textContent === "embeddedfrom the embed")`)
}
