// Package browsertest starts headless Chromium (Debian's chromium package)
// for tests that look at pages as a person would, through chromedp.
//
// Without a browser the test is skipped with a message, unless
// REQUIRE_CHROMIUM=1 (set by CI), in which case it fails.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Find returns the path of a Chromium or Chrome binary, or "".
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New returns a browser context that ends with the test (and at most after
// timeout). Each call starts a separate browser process.
func New(tb testing.TB, timeout time.Duration) context.Context {
	tb.Helper()
	bin := Find()
	if bin == "" {
		if os.Getenv("REQUIRE_CHROMIUM") == "1" {
			tb.Fatal("no chromium binary found but REQUIRE_CHROMIUM=1 (apt-get install chromium)")
		}
		tb.Skip("no chromium binary found; skipping browser test (apt-get install chromium, or set REQUIRE_CHROMIUM=1 to fail instead)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelCtx := chromedp.NewContext(allocCtx)
	// Start the browser now, on a context without a deadline (a deadline on
	// the first run would bound the browser's whole life), so a start-up
	// failure is reported as such.
	if err := chromedp.Do(browserCtx); err != nil {
		cancelCtx()
		cancelAlloc()
		tb.Fatalf("start %s: %v", bin, err)
	}
	ctx, cancelTimeout := context.WithTimeout(browserCtx, timeout)
	tb.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// NewTab opens another tab (page) in the browser of ctx.
func NewTab(tb testing.TB, ctx context.Context) context.Context {
	tb.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	tb.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		tb.Fatalf("open tab: %v", err)
	}
	return tab
}
