package proctest

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStartWaitsAndStopsGracefully(t *testing.T) {
	bin := Build(t, "./testdata/server")
	if again := Build(t, "./testdata/server"); again != bin {
		t.Fatalf("built twice: %s, %s", bin, again)
	}
	t.Setenv("PROCTEST_LEAK", "from the developer's shell")
	begin := time.Now()
	p := Start(t, bin, Options{Env: []string{"READY_AFTER=300ms", "GIVEN=yes"}, ReadyPath: "/readyz"})
	if waited := time.Since(begin); waited < 300*time.Millisecond {
		t.Errorf("ready after %s, before the server said so", waited)
	}
	if got := get(t, p.Base+"/env?name=GIVEN"); got != "yes" {
		t.Errorf("GIVEN=%q", got)
	}
	if got := get(t, p.Base+"/env?name=PROCTEST_LEAK"); got != "" {
		t.Errorf("the test's environment leaked in: %q", got)
	}
	if !strings.Contains(p.Logs.String(), "listening on 127.0.0.1:") {
		t.Errorf("logs: %q", p.Logs.String())
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Logs.String(), "graceful stop") {
		t.Errorf("not stopped by SIGTERM: %q", p.Logs.String())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("a second stop: %v", err)
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	p := Start(t, Build(t, "./testdata/server"), Options{Env: []string{"IGNORE_TERM=1"}, StopTimeout: 200 * time.Millisecond})
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("still running")
	}
}

func TestWaitReadyNoticesAnExit(t *testing.T) {
	p := &Process{done: make(chan struct{})}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = "127.0.0.1:" + port
	close(p.done) // as when the binary exits at start
	if err := p.waitReady("", 5*time.Second); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("an exited process: %v", err)
	}
	p = &Process{done: make(chan struct{}), Addr: p.Addr}
	if err := p.waitReady("", 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("nothing listening: %v", err)
	}
}
