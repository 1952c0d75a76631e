// Package updater keeps the databases current from their vendor's download service
// (IP2Location, MaxMind or DB-IP): every interval it asks for each configured database
// conditionally, downloads a new file only when there is one, checks the published
// checksum, unpacks it, and hands it over to be verified and swapped in. Any failure
// leaves the current database serving.
package updater

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Installer verifies src, moves it to dst and swaps it in; dbfile.Manager implements it
// (dbfile.FileInstaller too, for a database no manager serves).
type Installer interface {
	InstallFile(src, dst string) error
}

// Database is one database the updater keeps current.
type Database struct {
	Name      string // "city" or "asn": the metrics' database label and the logs'
	Edition   string // IP2Location product code, MaxMind edition ID or DB-IP file stem
	Target    string // the file it lives in
	Installer Installer
}

// Config configures the updater.
type Config struct {
	Source string // SourceIP2Location (default), SourceMaxMind or SourceDBIP

	Token   string // IP2LOCATION_TOKEN
	Product string // IP2LOCATION_PRODUCT, e.g. DB11LITEBINIPV6: the city edition when Databases is empty
	Target  string // the city database's file when Databases is empty

	AccountID  string // MAXMIND_ACCOUNT_ID
	LicenseKey string // MAXMIND_LICENSE_KEY

	// Databases to keep current; empty: the one city database, Product into Target,
	// installed by New's inst.
	Databases []Database

	Interval time.Duration // GEOIP_UPDATE_INTERVAL; default 24h, at least 1m
	URL      string        // the source's endpoint (DefaultURL, DefaultMaxMindURL, DefaultDBIPURL)
	Client   *http.Client  // default: 30-minute timeout, Authorization dropped on a redirect to another host
	MaxBytes int64         // download and unpacked size limit; default 4 GiB
	Logger   *slog.Logger
	Now      func() time.Time // default time.Now; DB-IP's file names follow the month
}

// Updater downloads and installs database updates.
type Updater struct {
	cfg       Config
	vendor    vendor
	secrets   []string // redacted from every error and log line, longest first
	attempts  *prometheus.CounterVec
	failures  *prometheus.CounterVec
	unchanged *prometheus.CounterVec
	last      *prometheus.GaugeVec
	// syncFile is (*os.File).Sync; tests record when it runs.
	syncFile func(*os.File) error
}

// Outcome is what one check of a database did.
type Outcome string

const (
	Updated   Outcome = "updated"   // a new file was downloaded and installed
	Unchanged Outcome = "unchanged" // the source said the file installed is current (304)
	Failed    Outcome = "failed"    // nothing changed; Result.Err says why
)

// Result is one database's check.
type Result struct {
	Database, Edition, Target string
	Outcome                   Outcome
	Err                       error // redacted: it holds no secret
}

// New checks cfg and returns an Updater.
func New(cfg Config, inst Installer) (*Updater, error) {
	if cfg.Source == "" {
		cfg.Source = SourceIP2Location
	}
	switch cfg.Source {
	case SourceIP2Location:
		if cfg.Token == "" || (cfg.Product == "" && len(cfg.Databases) == 0) {
			return nil, errors.New("updater: IP2LOCATION_TOKEN and IP2LOCATION_PRODUCT are both required")
		}
	case SourceMaxMind:
		if cfg.AccountID == "" || cfg.LicenseKey == "" {
			return nil, errors.New("updater: MAXMIND_ACCOUNT_ID and MAXMIND_LICENSE_KEY are both required")
		}
	}
	v, err := newVendor(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Databases) == 0 {
		if cfg.Product == "" {
			return nil, errors.New("updater: no database to update")
		}
		cfg.Databases = []Database{{Name: "city", Edition: cfg.Product, Target: cfg.Target, Installer: inst}}
	}
	for _, d := range cfg.Databases {
		if d.Name == "" || d.Edition == "" {
			return nil, fmt.Errorf("updater: database %q without a name or edition", d.Name)
		}
		if d.Target == "" {
			return nil, fmt.Errorf("updater: no target path for the %s database", d.Name)
		}
	}
	if cfg.Interval == 0 {
		cfg.Interval = 24 * time.Hour
	}
	if cfg.Interval < time.Minute {
		return nil, fmt.Errorf("updater: interval %s is too short (vendors limit downloads)", cfg.Interval)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Minute, CheckRedirect: dropAuthOffHost}
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 4 << 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	u := &Updater{
		cfg:      cfg,
		vendor:   v,
		secrets:  secretsOf(cfg),
		syncFile: (*os.File).Sync,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoip_database_update_attempts_total",
			Help: "Checks for a new database file, by database (city or asn).",
		}, []string{"database"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoip_database_update_failures_total",
			Help: "Checks that failed to download, check, unpack, verify or install a database, by database.",
		}, []string{"database"}),
		unchanged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoip_database_update_unchanged_total",
			Help: "Checks the source answered 304 Not Modified: nothing downloaded, by database.",
		}, []string{"database"}),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoip_database_update_last_success_timestamp_seconds",
			Help: "When a check last succeeded (a new file installed, or the installed one found current), as a Unix time, by database.",
		}, []string{"database"}),
	}
	for _, d := range cfg.Databases {
		u.attempts.WithLabelValues(d.Name)
		u.failures.WithLabelValues(d.Name)
		u.unchanged.WithLabelValues(d.Name)
	}
	return u, nil
}

// dropAuthOffHost follows up to 10 redirects and drops Authorization when one leaves the
// host (port included): MaxMind redirects to presigned storage URLs, which must not
// receive the license key (and refuse a request carrying two authorizations).
func dropAuthOffHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		req.Header.Del("Authorization")
	}
	return nil
}

// RegisterMetrics registers the updater's metrics on reg.
func (u *Updater) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{u.attempts, u.failures, u.unchanged, u.last} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Databases lists the databases the updater keeps current.
func (u *Updater) Databases() []Database { return slices.Clone(u.cfg.Databases) }

// Run checks now if a database was never checked (or its file is missing) or was last
// checked more than an interval ago, then once per interval, until ctx ends. Failures
// are logged and wait for the next round.
func (u *Updater) Run(ctx context.Context) {
	wait := u.cfg.Interval
	for _, d := range u.cfg.Databases {
		last := loadState(d.Target).Checked
		if st, err := os.Stat(d.Target); err != nil {
			last = time.Time{}
		} else if last.IsZero() {
			last = st.ModTime()
		}
		wait = min(wait, max(0, u.cfg.Interval-u.cfg.Now().Sub(last)))
	}
	u.cfg.Logger.Info("database updater started", "source", u.cfg.Source, "databases", u.names(),
		"interval", u.cfg.Interval.String(), "next_in", wait.String())
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, r := range u.UpdateEach(ctx) {
			if r.Err != nil && ctx.Err() == nil {
				u.cfg.Logger.Error("database update failed; the current database keeps serving",
					"database", r.Database, "edition", r.Edition, "err", r.Err)
			}
		}
		t.Reset(u.cfg.Interval)
	}
}

func (u *Updater) names() []string {
	var out []string
	for _, d := range u.cfg.Databases {
		out = append(out, d.Name+"="+d.Edition)
	}
	return out
}

// Update checks every database once; the error joins the failures'. Its errors never
// hold the token, key or any other secret of the request (see redact): errors from the
// HTTP client quote the URL, and the services' text answers may echo it.
func (u *Updater) Update(ctx context.Context) error {
	var errs []error
	for _, r := range u.UpdateEach(ctx) {
		errs = append(errs, r.Err)
	}
	return errors.Join(errs...)
}

// UpdateEach checks every database once and says what each check did.
func (u *Updater) UpdateEach(ctx context.Context) []Result {
	out := make([]Result, 0, len(u.cfg.Databases))
	for _, d := range u.cfg.Databases {
		out = append(out, u.updateOne(ctx, d))
	}
	return out
}

func (u *Updater) updateOne(ctx context.Context, d Database) Result {
	r := Result{Database: d.Name, Edition: d.Edition, Target: d.Target}
	u.attempts.WithLabelValues(d.Name).Inc()
	outcome, err := u.update(ctx, d)
	if err != nil {
		u.failures.WithLabelValues(d.Name).Inc()
		r.Outcome = Failed
		r.Err = errors.New(u.redact(err.Error())) // the chain is dropped: it holds the secrets
		return r
	}
	r.Outcome = outcome
	u.last.WithLabelValues(d.Name).SetToCurrentTime()
	if outcome == Unchanged {
		u.unchanged.WithLabelValues(d.Name).Inc()
		u.cfg.Logger.Info("database unchanged at the source; nothing downloaded", "database", d.Name, "edition", d.Edition, "path", d.Target)
	} else {
		u.cfg.Logger.Info("database updated", "database", d.Name, "edition", d.Edition, "path", d.Target)
	}
	return r
}

func (u *Updater) update(ctx context.Context, d Database) (Outcome, error) {
	dir := filepath.Dir(d.Target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Failed, fmt.Errorf("update: %w", err)
	}
	prev := loadState(d.Target)
	if _, err := os.Stat(d.Target); err != nil {
		prev = state{} // no file to keep: ask unconditionally
	}
	archive, got, err := u.download(ctx, d, dir, prev)
	if err != nil {
		return Failed, err
	}
	if archive == "" { // 304
		prev.Checked = u.cfg.Now().UTC()
		if err := saveState(d.Target, prev); err != nil {
			u.cfg.Logger.Warn("could not record the check; the next one asks again", "database", d.Name, "err", err)
		}
		return Unchanged, nil
	}
	defer os.Remove(archive)
	db, err := u.unpack(archive, dir, d.Edition, u.vendor.format())
	if err != nil {
		return Failed, err
	}
	defer os.Remove(db) // gone already when installed
	if err := d.Installer.InstallFile(db, d.Target); err != nil {
		return Failed, fmt.Errorf("update: %w", err)
	}
	got.Checked = u.cfg.Now().UTC()
	if err := saveState(d.Target, got); err != nil {
		u.cfg.Logger.Warn("could not record the download; the next check downloads again", "database", d.Name, "err", err)
	}
	return Updated, nil
}

// download asks for d's file conditionally (prev's validators, when prev names the same
// file) and saves a new one to a temporary file whose published checksum, if any, it
// checks. It returns "" when the source answered 304, and the validators of what it got.
func (u *Updater) download(ctx context.Context, d Database, dir string, prev state) (string, state, error) {
	cands := u.vendor.candidates(d.Edition, u.cfg.Now())
	for i, c := range cands {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return "", state{}, fmt.Errorf("download %s: %w", c.key, err)
		}
		u.vendor.authorize(req)
		if prev.Key == c.key {
			if prev.ETag != "" {
				req.Header.Set("If-None-Match", prev.ETag)
			}
			if prev.LastModified != "" {
				req.Header.Set("If-Modified-Since", prev.LastModified)
			}
		}
		resp, err := u.cfg.Client.Do(req)
		if err != nil {
			return "", state{}, fmt.Errorf("download %s: %w", c.key, err) // quotes the URL: Update redacts
		}
		path, err := u.save(resp, c, dir, i < len(cands)-1)
		if errors.Is(err, errTryNext) {
			u.cfg.Logger.Info("not published yet; trying the previous file", "database", d.Name, "file", c.key)
			continue
		}
		if err != nil || path == "" {
			return "", state{}, err
		}
		got := state{Key: c.key, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
		if err := u.checkSum(ctx, c, path); err != nil {
			os.Remove(path)
			return "", state{}, err
		}
		return path, got, nil
	}
	return "", state{}, fmt.Errorf("download %s: none of %d files found", d.Edition, len(cands))
}

var errTryNext = errors.New("not found; try the next file")

// save reads resp: "" for 304, errTryNext for a 404 when another file may be asked, the
// temporary file holding the body for 200.
func (u *Updater) save(resp *http.Response, c candidate, dir string, more bool) (string, error) {
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return "", nil
	case resp.StatusCode == http.StatusNotFound && more:
		return "", errTryNext
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", fmt.Errorf("download %s: the source refused the credentials: status %s%s", c.key, resp.Status, bodyHint(resp.Body))
	case resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("download %s: status %s%s", c.key, resp.Status, bodyHint(resp.Body))
	}
	f, err := os.CreateTemp(dir, ".geoip-download-*")
	if err != nil {
		return "", fmt.Errorf("download %s: %w", c.key, err)
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, u.cfg.MaxBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > u.cfg.MaxBytes {
		err = fmt.Errorf("larger than %d bytes", u.cfg.MaxBytes)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("download %s: %w", c.key, err)
	}
	if msg, ok := serviceMessage(f.Name(), u.vendor.format()); ok {
		os.Remove(f.Name())
		return "", fmt.Errorf("download %s: the service answered %q instead of a %s", c.key, msg, u.vendor.format())
	}
	return f.Name(), nil
}

// bodyHint is the start of an error answer's text (MaxMind says why it refused), to
// quote in the error; Update redacts it like the rest.
func bodyHint(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 200))
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	if s == "" {
		return ""
	}
	return ": " + fmt.Sprintf("%q", s)
}

// checkSum compares the file with the SHA-256 its source publishes (MaxMind's
// suffix=tar.gz.sha256, "<hex>  NAME"); sources without one pass.
func (u *Updater) checkSum(ctx context.Context, c candidate, path string) error {
	sumURL := u.vendor.checksumURL(c)
	if sumURL == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sumURL, nil)
	if err != nil {
		return fmt.Errorf("checksum %s: %w", c.key, err)
	}
	u.vendor.authorize(req)
	resp, err := u.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("checksum %s: %w", c.key, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("checksum %s: status %s%s", c.key, resp.Status, bodyHint(resp.Body))
	}
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 1024)).ReadString('\n')
	fields := strings.Fields(line)
	if len(fields) == 0 || !sha256Hex.MatchString(fields[0]) {
		return fmt.Errorf("checksum %s: the published checksum is not a SHA-256: %q", c.key, strings.TrimSpace(line))
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("checksum %s: %w", c.key, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("checksum %s: %w", c.key, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, fields[0]) {
		return fmt.Errorf("checksum %s: the download's SHA-256 is %s, the published one %s", c.key, got, strings.ToLower(fields[0]))
	}
	return nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// secretsOf lists what must never be logged: the token and license key as given and as
// escaped in a URL or a Basic header, and the credentials and query values of a
// configured URL (a mirror's key, say).
func secretsOf(cfg Config) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 3 { // shorter values would redact ordinary words
			out = append(out, v, url.QueryEscape(v), url.PathEscape(v))
		}
	}
	add(cfg.Token)
	add(cfg.LicenseKey)
	if cfg.LicenseKey != "" {
		add(base64.StdEncoding.EncodeToString([]byte(cfg.AccountID + ":" + cfg.LicenseKey)))
	}
	if u, err := url.Parse(cfg.URL); err == nil {
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
				// As sent in Authorization: Basic, which a service may echo.
				add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + p)))
			}
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// secretParam and userinfo catch secrets in URLs that are not the configured ones (a
// redirect's, say): the values of credential-like query parameters (a presigned URL's
// signature among them), and user:password@.
var (
	secretParam = regexp.MustCompile(`(?i)\b(token|key|apikey|api_key|access_token|secret|password|passwd|auth|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=[^&\s"'<>]+`)
	userinfo    = regexp.MustCompile(`://[^/@\s"'<>]+@`)
	authHeader  = regexp.MustCompile(`(?i)\b(basic|bearer) [A-Za-z0-9+/=._~-]{6,}`)
)

// redact removes every secret from a message the updater writes.
func (u *Updater) redact(msg string) string {
	for _, s := range u.secrets {
		msg = strings.ReplaceAll(msg, s, "REDACTED")
	}
	msg = secretParam.ReplaceAllString(msg, "${1}=REDACTED")
	msg = authHeader.ReplaceAllString(msg, "${1} REDACTED")
	return userinfo.ReplaceAllString(msg, "://REDACTED@")
}
