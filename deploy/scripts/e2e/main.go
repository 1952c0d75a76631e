// Command e2e checks the compose stack end to end through its reverse proxy. The compose
// test (deploy/scripts/compose-test.sh) runs one scenario at a time and does the Docker
// side (scaling, killing a replica, restarting Redis) through -disrupt.
//
//	e2e [flags] smoke|balance|scale|failover|persist|monitoring|trace
//
// Wire formats and paths are in contract.go.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	chatclient "github.com/apistack/platform/services/chat/client"
)

func main() {
	base := flag.String("base", "http://localhost:8080", "the proxy's address")
	token := flag.String("token", os.Getenv("CHAT_ADMIN_TOKEN"), "chat administrator token (default $CHAT_ADMIN_TOKEN)")
	channel := flag.String("channel", "general", "chat channel")
	prometheus := flag.String("prometheus", "http://localhost:9090", "Prometheus's address (scenario monitoring)")
	want := flag.String("want", "geoip=2,chat=2", "healthy scrape targets per job (scenario monitoring)")
	chatHosts := flag.String("chat-hosts", "", "comma-separated host names of the chat containers: every hello's replica must be one (scenario scale)")
	disrupt := flag.String("disrupt", "", "shell command run at the scenario's fault point (failover: with $UPSTREAM set to the replica to kill)")
	otlpListen := flag.String("otlp-listen", "", "address of the OTLP/HTTP sink the services export their spans to (scenario trace)")
	logsCmd := flag.String("logs", "", "shell command that prints a service's logs, the service's name appended (scenario trace)")
	timeout := flag.Duration("timeout", 3*time.Minute, "whole scenario")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: e2e [flags] smoke|balance|scale|failover|persist|monitoring|trace")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	u, err := url.Parse(*base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: -base:", err)
		os.Exit(2)
	}
	s := &stack{base: u, token: *token, channel: *channel, http: &http.Client{Timeout: 15 * time.Second}}
	r := &runner{stack: s, disrupt: *disrupt, prometheus: *prometheus, wantTargets: *want, chatHosts: map[string]bool{},
		otlpListen: *otlpListen, logsCmd: *logsCmd}
	for _, h := range strings.Split(*chatHosts, ",") {
		if h != "" {
			r.chatHosts[h] = true
		}
	}

	scenarios := map[string]func(context.Context){
		"smoke":      r.smoke,
		"balance":    r.balance,
		"scale":      r.scale,
		"failover":   r.failover,
		"persist":    r.persist,
		"monitoring": r.monitoring,
		"trace":      r.trace,
	}
	run, ok := scenarios[flag.Arg(0)]
	if !ok {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	run(ctx)
	fmt.Printf("e2e %s: %d passed, %d failed\n", flag.Arg(0), r.passed, r.failed)
	if r.failed > 0 {
		os.Exit(1)
	}
}

type runner struct {
	*stack
	disrupt        string
	prometheus     string
	wantTargets    string
	chatHosts      map[string]bool
	otlpListen     string
	logsCmd        string
	passed, failed int
}

// check runs one named check and reports it; later checks still run.
func (r *runner) check(name string, fn func() error) bool {
	start := time.Now()
	if err := fn(); err != nil {
		r.failed++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return false
	}
	r.passed++
	fmt.Printf("ok   %s (%s)\n", name, time.Since(start).Round(time.Millisecond))
	return true
}

func (r *runner) runDisrupt(ctx context.Context, env ...string) error {
	if r.disrupt == "" {
		return fmt.Errorf("this scenario needs -disrupt")
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", r.disrupt)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("-disrupt %q: %w", r.disrupt, err)
	}
	return nil
}

// smoke: one replica of each; the proxy's index, geoip lookup, docs behind the prefix, a
// chat send and its WebSocket delivery.
func (r *runner) smoke(ctx context.Context) {
	r.check("proxy index is an HTML page whose links answer", func() error { return r.proxyIndex(ctx) })
	r.check("geoip lookup "+geoipLookupIP, func() error {
		res, err := r.get(ctx, geoipLookupPath)
		if err != nil {
			return err
		}
		if err := wantStatus(res, http.StatusOK); err != nil {
			return err
		}
		var loc geoipLocation
		if err := json.Unmarshal(res.body, &loc); err != nil {
			return fmt.Errorf("body %s: %w", snippet(res.body), err)
		}
		if loc.Country != geoipWantCountry {
			return fmt.Errorf("country %q, want %q: %s", loc.Country, geoipWantCountry, snippet(res.body))
		}
		return nil
	})
	r.check("geoip redirect /geoip -> /geoip/", func() error {
		res, err := r.get(ctx, geoipPrefix)
		if err != nil {
			return err
		}
		if res.finalURL.Path != geoipPrefix+"/" {
			return fmt.Errorf("ended at %s, want %s/", res.finalURL.Path, geoipPrefix)
		}
		return nil
	})
	r.check("geoip root names the endpoints, docs and health, under the prefix", func() error { return r.geoipRoot(ctx) })
	r.check("/metrics is not served through the proxy", func() error { return r.metricsNotPublic(ctx) })
	for _, prefix := range []string{geoipPrefix, chatPrefix} {
		r.check(prefix+"/docs renders behind the proxy", func() error { return r.docs(ctx, prefix) })
		r.check(prefix+"/openapi.json servers carry the prefix", func() error { return r.openAPI(ctx, prefix) })
	}
	r.check("chat browser client", func() error {
		res, err := r.get(ctx, chatPrefix+"/")
		if err != nil {
			return err
		}
		if err := wantStatus(res, http.StatusOK); err != nil {
			return err
		}
		return wantHTML(res)
	})
	r.check("chat browser client module and embed behind the proxy", func() error {
		res, err := r.get(ctx, chatPrefix+"/client.js")
		if err != nil {
			return err
		}
		if err := wantStatus(res, http.StatusOK); err != nil {
			return err
		}
		if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") || !strings.Contains(string(res.body), "export class ChatClient") {
			return fmt.Errorf("%s: Content-Type %q, want the ES module", res.finalURL.Path, ct)
		}
		res, err = r.get(ctx, chatPrefix+"/embed/"+r.channel+"?overlay=1")
		if err != nil {
			return err
		}
		if err := wantStatus(res, http.StatusOK); err != nil {
			return err
		}
		if csp := res.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			return fmt.Errorf("%s: Content-Security-Policy %q, want the page's", res.finalURL.Path, csp)
		}
		return wantHTML(res)
	})
	r.check("chat send is delivered over the WebSocket", func() error {
		c, err := r.dial(ctx, "")
		if err != nil {
			return err
		}
		defer c.close()
		m, _, err := r.send(ctx, "smoke "+stamp())
		if err != nil {
			return err
		}
		return c.await(ctx, 10*time.Second, m)
	})
}

// proxyIndex: / answers an HTML page linking to each service, its docs and a lookup, and
// every link on it answers 200 through the proxy.
func (r *runner) proxyIndex(ctx context.Context) error {
	res, err := r.get(ctx, "/")
	if err != nil {
		return err
	}
	if err := wantStatus(res, http.StatusOK); err != nil {
		return err
	}
	links, err := indexLinks(res)
	if err != nil {
		return err
	}
	for _, link := range links {
		got, err := r.get(ctx, link)
		if err != nil {
			return err
		}
		if err := wantStatus(got, http.StatusOK); err != nil {
			return fmt.Errorf("index link %q: %w", link, err)
		}
	}
	return nil
}

// hrefPattern finds the target of each link (<a href=...>) of a page.
var hrefPattern = regexp.MustCompile(`(?i)<a\s[^>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)

// indexLinks checks that res is an HTML page linking to every path of proxyIndexLinks
// and returns the paths of all its links, resolved against the page's URL. A link that
// leaves the proxy's host is an error: the index is for this stack.
func indexLinks(res *response) ([]string, error) {
	if err := wantHTML(res); err != nil {
		return nil, err
	}
	var paths []string
	for _, m := range hrefPattern.FindAllStringSubmatch(string(res.body), -1) {
		href := m[1] + m[2] + m[3]
		ref, err := url.Parse(html.UnescapeString(href))
		if err != nil || href == "" {
			return nil, fmt.Errorf("bad link %q on %s", href, res.finalURL.Path)
		}
		target := res.finalURL.ResolveReference(ref)
		if target.Host != res.finalURL.Host {
			return nil, fmt.Errorf("link %q leaves %s", href, res.finalURL.Host)
		}
		paths = append(paths, target.Path)
	}
	for _, want := range proxyIndexLinks {
		if !slices.Contains(paths, want) {
			return nil, fmt.Errorf("%s links %v, not %s", res.finalURL.Path, paths, want)
		}
	}
	return paths, nil
}

// geoipRoot: /geoip/ answers an index whose relative links work under the prefix.
func (r *runner) geoipRoot(ctx context.Context) error {
	res, err := r.get(ctx, geoipPrefix+"/")
	if err != nil {
		return err
	}
	if err := wantStatus(res, http.StatusOK); err != nil {
		return err
	}
	var idx geoipIndex
	if err := json.Unmarshal(res.body, &idx); err != nil {
		return fmt.Errorf("body %s: %w", snippet(res.body), err)
	}
	if !slices.Contains(idx.Endpoints, "GET /{ip}/json/") {
		return fmt.Errorf("endpoints %v lack GET /{ip}/json/", idx.Endpoints)
	}
	for _, link := range []string{idx.Docs, idx.OpenAPI, idx.Health} {
		ref, err := url.Parse(link)
		if err != nil || link == "" {
			return fmt.Errorf("bad link %q in %s", link, snippet(res.body))
		}
		target := res.finalURL.ResolveReference(ref).Path
		if !strings.HasPrefix(target, geoipPrefix+"/") {
			return fmt.Errorf("link %q leads to %s, outside %s/", link, target, geoipPrefix)
		}
		got, err := r.get(ctx, target)
		if err != nil {
			return err
		}
		if err := wantStatus(got, http.StatusOK); err != nil {
			return fmt.Errorf("link %q: %w", link, err)
		}
	}
	return nil
}

// metricsNotPublic: every spelling of a service's /metrics answers 404 through the proxy,
// and none of them leaks Prometheus's exposition format.
func (r *runner) metricsNotPublic(ctx context.Context) error {
	for _, p := range metricsPaths {
		res, err := r.getRaw(ctx, p)
		if err != nil {
			return err
		}
		if res.status != http.StatusNotFound || strings.Contains(string(res.body), "# HELP") {
			return fmt.Errorf("%s: status %d, want 404: %s", p, res.status, snippet(res.body))
		}
	}
	return nil
}

func (r *runner) docs(ctx context.Context, prefix string) error {
	res, err := r.get(ctx, prefix+"/docs")
	if err != nil {
		return err
	}
	if err := wantStatus(res, http.StatusOK); err != nil {
		return err
	}
	// A redirect the service issued must have kept the prefix.
	if !strings.HasPrefix(res.finalURL.Path, prefix+"/") {
		return fmt.Errorf("docs ended at %s, outside %s/", res.finalURL.Path, prefix)
	}
	return wantHTML(res)
}

func (r *runner) openAPI(ctx context.Context, prefix string) error {
	res, err := r.get(ctx, prefix+"/openapi.json")
	if err != nil {
		return err
	}
	if err := wantStatus(res, http.StatusOK); err != nil {
		return err
	}
	var doc openAPIDoc
	if err := json.Unmarshal(res.body, &doc); err != nil {
		return fmt.Errorf("body %s: %w", snippet(res.body), err)
	}
	if len(doc.Servers) == 0 {
		return fmt.Errorf("no servers entry")
	}
	for _, s := range doc.Servers {
		u, err := url.Parse(s.URL)
		if err != nil {
			return fmt.Errorf("server url %q: %w", s.URL, err)
		}
		if strings.TrimSuffix(u.Path, "/") == prefix {
			return nil
		}
	}
	return fmt.Errorf("no server url ends in %s: %+v", prefix, doc.Servers)
}

// balance: with geoip scaled to two, the proxy spreads lookups over both replicas.
func (r *runner) balance(ctx context.Context) {
	r.check("geoip lookups reach two replicas", func() error {
		seen := map[string]bool{}
		deadline := time.Now().Add(30 * time.Second)
		for len(seen) < 2 && time.Now().Before(deadline) {
			res, err := r.get(ctx, geoipLookupPath)
			if err != nil {
				return err
			}
			if err := wantStatus(res, http.StatusOK); err != nil {
				return err
			}
			seen[res.header.Get(servedByHeader)] = true
			time.Sleep(100 * time.Millisecond)
		}
		if len(seen) < 2 {
			return fmt.Errorf("only replicas %v answered", keys(seen))
		}
		return nil
	})
}

// scale: with chat scaled to two, messages sent through both replicas reach every client.
// Each client sits on one replica (the proxy spreads them), so each one receiving what
// was sent through both proves delivery across replicas. (Which replica holds a WebSocket
// is not visible: Caddy sets no response headers on a 101.)
func (r *runner) scale(ctx context.Context) {
	var clients []*wsClient
	defer func() { closeAll(clients) }()
	if !r.check("WebSocket clients through the proxy", func() error {
		var err error
		if clients, err = r.dialN(ctx, 4); err != nil {
			return err
		}
		// When hello names the replica, the spread is visible: round robin over two
		// replicas cannot put four consecutive connections on one.
		replicas := map[string]bool{}
		for _, c := range clients {
			replicas[c.hello.Replica] = true
		}
		if len(replicas) < 2 {
			return fmt.Errorf("the proxy put every WebSocket on replica %v", keys(replicas))
		}
		// The name in hello is the container's host name: what docker ps and the logs show.
		if len(r.chatHosts) > 0 {
			for name := range replicas {
				if !r.chatHosts[name] {
					return fmt.Errorf("hello names replica %q, not one of the chat containers' host names %v", name, keys(r.chatHosts))
				}
			}
		}
		return nil
	}) {
		return
	}
	r.check("messages sent through each replica reach every client", func() error {
		sent, err := r.sendViaReplicas(ctx, 2, "scale")
		if err != nil {
			return err
		}
		for _, c := range clients {
			if err := c.await(ctx, 10*time.Second, sent...); err != nil {
				return err
			}
		}
		return nil
	})
}

// sendViaReplicas sends until n different replicas have stored a message.
func (r *runner) sendViaReplicas(ctx context.Context, n int, label string) ([]chatMessage, error) {
	var sent []chatMessage
	via := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(via) < n {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sends reached only replicas %v", keys(via))
		}
		m, by, err := r.send(ctx, label+" "+stamp())
		if err != nil {
			return nil, err
		}
		if by == "" {
			return nil, fmt.Errorf("the proxy sent no %s header", servedByHeader)
		}
		sent = append(sent, m)
		via[by] = true
	}
	return sent, nil
}

func (r *runner) dialN(ctx context.Context, n int) ([]*wsClient, error) {
	var out []*wsClient
	for range n {
		c, err := r.dial(ctx, "")
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (r *runner) dialRetry(ctx context.Context, since chatclient.Cursor, wait time.Duration) (*wsClient, error) {
	deadline := time.Now().Add(wait)
	for {
		c, err := r.dial(ctx, since)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no reconnect within %s: %w", wait, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func closeAll(cs []*wsClient) {
	for _, c := range cs {
		c.close()
	}
}

// failover: a chat replica is killed. The clients it held see their connection end,
// reconnect through the proxy with since= and receive what was sent meanwhile, once; the
// clients of the other replica notice nothing.
func (r *runner) failover(ctx context.Context) {
	var clients []*wsClient
	defer func() { closeAll(clients) }()
	var before chatMessage
	var target string
	if !r.check("clients connected and receiving", func() error {
		var err error
		if clients, err = r.dialN(ctx, 6); err != nil {
			return err
		}
		if before, target, err = r.send(ctx, "before kill "+stamp()); err != nil {
			return err
		}
		if target == "" {
			return fmt.Errorf("the proxy sent no %s header", servedByHeader)
		}
		for _, c := range clients {
			if err := c.await(ctx, 10*time.Second, before); err != nil {
				return err
			}
		}
		return nil
	}) {
		return
	}
	var victims, survivors []*wsClient
	if !r.check("replica "+target+" killed; its clients are cut off", func() error {
		if err := r.runDisrupt(ctx, "UPSTREAM="+target); err != nil {
			return err
		}
		// The proxy spread the clients over the replicas: wait for the killed one's to drop.
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			victims, survivors = nil, nil
			for _, c := range clients {
				if c.isClosed() {
					victims = append(victims, c)
				} else {
					survivors = append(survivors, c)
				}
			}
			if len(victims) > 0 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(victims) == 0 {
			return fmt.Errorf("none of %d clients was on the killed replica", len(clients))
		}
		fmt.Printf("     %d of %d clients cut off\n", len(victims), len(clients))
		return nil
	}) {
		return
	}
	var during chatMessage
	if !r.check("sends go on while a replica is gone", func() error {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var err error
		during, _, err = r.sendRetry(sctx, "while down "+stamp())
		return err
	}) {
		return
	}
	r.check("clients of the surviving replica keep receiving", func() error {
		for _, c := range survivors {
			if err := c.await(ctx, 10*time.Second, during); err != nil {
				return err
			}
		}
		return nil
	})
	r.check("cut-off clients reconnect through the proxy and recover with since=", func() error {
		var back []*wsClient
		defer func() { closeAll(back) }()
		for range victims {
			c, err := r.dialRetry(ctx, chatclient.Cursor(strconv.FormatInt(before.ID, 10)), 30*time.Second)
			if err != nil {
				return err
			}
			back = append(back, c)
			fmt.Printf("     reconnected (hello: last_id=%s recovered=%t replica=%q)\n", c.hello.LastID, c.hello.Recovered, c.hello.Replica)
			if err := c.await(ctx, 10*time.Second, during); err != nil {
				return err
			}
		}
		after, _, err := r.send(ctx, "after reconnect "+stamp())
		if err != nil {
			return err
		}
		for _, c := range back {
			if err := c.await(ctx, 10*time.Second, after); err != nil {
				return err
			}
			if n := c.seen[before.ID]; n > 0 {
				return fmt.Errorf("message %d, not newer than since=, was delivered again", before.ID)
			}
			if n := c.seen[during.ID]; n > 1 {
				return fmt.Errorf("message %d delivered %d times", during.ID, n)
			}
		}
		return nil
	})
}

// persist: messages acknowledged with 201 survive a Redis restart.
func (r *runner) persist(ctx context.Context) {
	var mark chatclient.Cursor
	var acked []chatMessage
	if !r.check("messages acknowledged before the Redis restart", func() error {
		c, err := r.dial(ctx, "")
		if err != nil {
			return err
		}
		mark = c.hello.LastID
		if mark == "" {
			mark = "0"
		}
		c.close()
		for i := range 5 {
			m, _, err := r.send(ctx, fmt.Sprintf("persist %d %s", i, stamp()))
			if err != nil {
				return err
			}
			acked = append(acked, m)
		}
		return nil
	}) {
		return
	}
	if !r.check("Redis restarted", func() error { return r.runDisrupt(ctx) }) {
		return
	}
	var after chatMessage
	if !r.check("chat accepts messages again", func() error {
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		var err error
		after, _, err = r.sendRetry(sctx, "after redis restart "+stamp())
		return err
	}) {
		return
	}
	r.check("no acknowledged message lost", func() error {
		c, err := r.dial(ctx, mark)
		if err != nil {
			return err
		}
		defer c.close()
		return c.await(ctx, 15*time.Second, append(acked, after)...)
	})
}

// monitoring: Prometheus scrapes every replica of each service, found through DNS.
func (r *runner) monitoring(ctx context.Context) {
	want := map[string]int{}
	for _, kv := range strings.Split(r.wantTargets, ",") {
		job, n, ok := strings.Cut(kv, "=")
		count, err := strconv.Atoi(n)
		if !ok || err != nil {
			r.check("-want", func() error { return fmt.Errorf("bad -want entry %q", kv) })
			return
		}
		want[job] = count
	}
	r.check(fmt.Sprintf("Prometheus scrapes every replica %v", want), func() error {
		deadline := time.Now().Add(90 * time.Second)
		for {
			got, err := r.upTargets(ctx)
			ok := err == nil
			for job, n := range want {
				ok = ok && got[job] == n
			}
			if ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("healthy targets %v (last error: %v)", got, err)
			}
			time.Sleep(2 * time.Second)
		}
	})
}

// upTargets counts the healthy scrape targets per job from Prometheus's HTTP API.
func (r *runner) upTargets(ctx context.Context) (map[string]int, error) {
	u := strings.TrimSuffix(r.prometheus, "/") + "/api/v1/query?query=" + url.QueryEscape("count by (job) (up == 1)")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	got := map[string]int{}
	for _, s := range body.Data.Result {
		v, _ := s.Value[1].(string)
		n, _ := strconv.Atoi(v)
		got[s.Metric["job"]] = n
	}
	return got, nil
}

func wantStatus(res *response, code int) error {
	if res.status != code {
		return fmt.Errorf("%s: status %d, want %d: %s", res.finalURL.Path, res.status, code, snippet(res.body))
	}
	return nil
}

func wantHTML(res *response) error {
	if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		return fmt.Errorf("%s: Content-Type %q, want text/html", res.finalURL.Path, ct)
	}
	if !strings.Contains(strings.ToLower(string(res.body)), "<html") {
		return fmt.Errorf("%s: body is not an HTML page: %s", res.finalURL.Path, snippet(res.body))
	}
	return nil
}

func stamp() string { return time.Now().UTC().Format("15:04:05.000000") }

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
