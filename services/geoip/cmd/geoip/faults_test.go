package main

// The fault and abuse suite of issue 13 for geoip: the real binary (built once, without
// the race detector, so its memory figures are real) over loopback, fed hostile requests,
// hostile sockets and a database replaced, truncated and corrupted while it serves.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apistack/platform/libs/apiserver/proctest"
	"github.com/apistack/platform/services/geoip/internal/binwriter"
)

func TestMain(m *testing.M) { os.Exit(proctest.Main(m)) }

// geoipProc is one geoip process (proctest.Process) with the /proc readings
// the fault tests compare.
type geoipProc struct{ *proctest.Process }

// startGeoip runs the geoip binary (built once, without the race detector,
// so its memory figures are real) as `serve` on a free loopback port in
// production mode with env added; proctest stops it (SIGTERM) when the test
// ends and shows its logs if the test failed.
func startGeoip(t *testing.T, env map[string]string) *geoipProc {
	t.Helper()
	vars := []string{"NODE_ENV=production"}
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	return &geoipProc{proctest.Start(t, proctest.Build(t, "."), proctest.Options{Args: []string{"serve"}, Env: vars})}
}

// procStatus reads a field of /proc/<pid>/status in kB (VmRSS, VmHWM).
func (p *geoipProc) procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}

// cpuTime is the process's user and system CPU time, from /proc/<pid>/stat.
func (p *geoipProc) cpuTime(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	// The command name (field 2) may hold spaces: count from its closing parenthesis.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// TestBatchFloodKeepsGeoipSmall is finding 1: 1 MB [0,0,...] bodies to POST /batch, 30 in
// parallel, three times. Each must get a small 400, and geoip must stay under 300 MB
// resident at its peak (it reached 6.95 GB).
func TestBatchFloodKeepsGeoipSmall(t *testing.T) {
	p := startGeoip(t, map[string]string{"RATE_LIMIT_MAX": "100000"})
	body := "[" + strings.TrimSuffix(strings.Repeat("0,", 524_000), ",") + "]"
	if len(body) > 1<<20 {
		t.Fatalf("body of %d bytes is over the default limit", len(body))
	}
	const parallel, rounds = 30, 3
	const answerLimit, rssLimitKB = 64 << 10, 300 << 10
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallel}, Timeout: time.Minute}
	cpuBefore, rssBefore := p.cpuTime(t), p.procStatus(t, "VmRSS")
	var largest atomic.Int64
	for range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, parallel)
		for range parallel {
			wg.Go(func() {
				resp, err := client.Post(p.Base+"/batch", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					errs <- err
					return
				}
				if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte("must have at most 100 items, got 524000")) {
					errs <- fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
				}
				for n := int64(len(b)); n > largest.Load(); {
					if largest.CompareAndSwap(largest.Load(), n) {
						break
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	cpu := p.cpuTime(t) - cpuBefore
	peak := p.procStatus(t, "VmHWM")
	t.Logf("%d requests of %d bytes: largest answer %d bytes, geoip resident %d MB before, peak %d MB, %.1f ms CPU per request",
		parallel*rounds, len(body), largest.Load(), rssBefore>>10, peak>>10, float64(cpu.Microseconds())/1000/float64(parallel*rounds))
	if largest.Load() >= answerLimit {
		t.Errorf("an answer was %d bytes, want under %d", largest.Load(), answerLimit)
	}
	if peak >= rssLimitKB {
		t.Errorf("geoip peaked at %d MB resident, want under %d MB", peak>>10, rssLimitKB>>10)
	}
}

// rawExchange sends raw on a new connection and reads until the server closes it, within
// limit: a server still holding the socket after that fails the test.
func rawExchange(t *testing.T, addr, raw string, limit time.Duration) (string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if raw != "" {
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the socket was still open after %s", limit)
	}
	return string(b), time.Since(start)
}

// The server's read-header timeout, which geoip keeps at the library's default.
const headerTimeout = 10 * time.Second

// TestHostileSocketsAreClosed: a GET announcing a body it never sends is answered and
// closed at once; 200 half-open sockets and a slowloris client trickling header bytes are
// all closed by the read-header timeout, while ordinary requests keep being answered.
func TestHostileSocketsAreClosed(t *testing.T) {
	p := startGeoip(t, map[string]string{"RATE_LIMIT_MAX": "100000"})
	answer, after := rawExchange(t, p.Addr, "GET /8.8.8.8/json/ HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 5*time.Second)
	if !strings.HasPrefix(answer, "HTTP/1.1 200 OK") || !strings.Contains(answer, "Connection: close") {
		t.Fatalf("unsent body: %.200q", answer)
	}
	t.Logf("GET with an unsent body: answered and closed after %s", after.Round(time.Millisecond))

	start := time.Now()
	const halfOpen = 200
	conns := make([]net.Conn, halfOpen)
	for i := range conns {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	slow, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	go func() {
		for _, b := range []byte("GET /8.8.8.8/json/ HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 100)) {
			if _, err := slow.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// Meanwhile, others are served.
	resp, err := http.Get(p.Base + "/8.8.8.8/json/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an ordinary request during the attack: %d", resp.StatusCode)
	}
	limit := headerTimeout + 3*time.Second
	for i, c := range append(conns, slow) {
		_ = c.SetReadDeadline(start.Add(limit))
		if _, err := io.ReadAll(c); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("socket %d still open %s after it was opened", i, limit)
			}
		}
	}
	t.Logf("%d half-open sockets and a slowloris client all closed within %s", halfOpen, time.Since(start).Round(time.Millisecond))
}

// binWithCity is a small DB11 BIN placing 8.8.8.0/24 and 2001:4860::/32 in city.
func binWithCity(t *testing.T, city string) []byte {
	t.Helper()
	b := binwriter.NewBuilder()
	id := b.Intern(binwriter.Location{Country: "US", CountryName: "United States", Region: "California",
		City: city, Latitude: 37.422, Longitude: -122.085})
	for _, p := range []string{"8.8.8.0/24", "2001:4860::/32"} {
		if err := b.AddPrefix(netip.MustParsePrefix(p), id); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := b.Write(&buf, binwriter.Options{Date: time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// failures reads geoip_database_reload_failures_total by reason from /metrics.
func failures(t *testing.T, base string) map[string]int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), `geoip_database_reload_failures_total{reason="`); ok {
			reason, value, _ := strings.Cut(rest, `"} `)
			n, _ := strconv.Atoi(value)
			out[reason] = n
		}
	}
	return out
}

// TestDatabaseFaultsUnderLoad replaces, truncates and corrupts the database file while
// clients look up without pause. Every answer must be a 200 from a database that was
// valid; bad files are refused, with the reason in the log and the metric.
func TestDatabaseFaultsUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.BIN")
	writeAtomically(t, path, binWithCity(t, "First Town"))
	p := startGeoip(t, map[string]string{"GEOIP_DB": path, "GEOIP_WATCH_INTERVAL": "50ms", "RATE_LIMIT_ALLOW": "127.0.0.1"})

	valid := map[string]bool{"First Town": true, "Second Town": true, "Final Town": true}
	var (
		mu      sync.Mutex
		seen    = map[string]int{}
		bad     []string
		answers atomic.Int64
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := client.Get(p.Base + "/8.8.8.8/json/")
				if err != nil {
					mu.Lock()
					bad = append(bad, err.Error())
					mu.Unlock()
					continue
				}
				var loc struct {
					City string `json:"city"`
				}
				err = json.NewDecoder(resp.Body).Decode(&loc)
				resp.Body.Close()
				answers.Add(1)
				mu.Lock()
				seen[loc.City]++
				if resp.StatusCode != http.StatusOK || err != nil || !valid[loc.City] {
					bad = append(bad, fmt.Sprintf("%d %q %v", resp.StatusCode, loc.City, err))
				}
				mu.Unlock()
			}
		})
	}
	count := func(city string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[city]
	}
	// serving reports whether answers naming city are still arriving.
	serving := func(city string) bool {
		before := count(city)
		time.Sleep(50 * time.Millisecond)
		return count(city) > before
	}
	await := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				stop()
				wg.Wait()
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	await("the first database to serve", func() bool { return serving("First Town") })

	second := binWithCity(t, "Second Town")
	writeAtomically(t, path, second)
	await("the replaced database", func() bool { return serving("Second Town") })

	refusals := []struct {
		name   string
		write  func()
		reason string
	}{
		// Truncated in place, as a copy cut short would leave it.
		{"truncated in place", func() {
			if err := os.Truncate(path, int64(len(second)*2/3)); err != nil {
				t.Fatal(err)
			}
		}, "corrupt"},
		// A valid header before a body whose first row points outside the file.
		{"body corrupt", func() {
			data := binWithCity(t, "Corrupt Town")
			base4 := int(binary.LittleEndian.Uint32(data[9:])) - 1
			binary.LittleEndian.PutUint32(data[base4+4+2*4:], uint32(len(data)+4096))
			writeAtomically(t, path, data)
		}, "corrupt"},
		{"garbage", func() { writeAtomically(t, path, bytes.Repeat([]byte("garbage "), 5000)) }, "format"},
	}
	for _, r := range refusals {
		before := failures(t, p.Base)[r.reason]
		r.write()
		await(r.name+" to be refused", func() bool { return failures(t, p.Base)[r.reason] > before })
		if !serving("Second Town") {
			t.Errorf("%s: the previous database stopped serving", r.name)
		}
	}
	writeAtomically(t, path, binWithCity(t, "Final Town"))
	await("the final database", func() bool { return serving("Final Town") })
	stop()
	wg.Wait()

	if len(bad) > 0 {
		t.Errorf("%d of %d answers were wrong during the faults, e.g. %v", len(bad), answers.Load(), bad[:min(len(bad), 5)])
	}
	logs := p.Logs.String()
	for _, want := range []string{`"reason":"corrupt"`, `"reason":"format"`, "corrupt bin: ipv4 row 0 column 4 points at byte"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs do not say %s", want)
		}
	}
	t.Logf("%d answers during replace, truncate, corrupt and garbage: cities %v", answers.Load(), seen)
}
