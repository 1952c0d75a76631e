// Package updater keeps the database current from IP2Location's download service: every
// interval it downloads the configured product, unpacks it, and hands it over to be
// verified and swapped in. Any failure leaves the current database serving.
package updater

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
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

// DefaultURL is IP2Location's download endpoint; it takes token and file (product code)
// query parameters and answers a zip, or a short text such as "NO PERMISSION".
const DefaultURL = "https://www.ip2location.com/download/"

// Installer verifies src, moves it to dst and swaps it in; dbfile.Manager implements it.
type Installer interface {
	InstallFile(src, dst string) error
}

// Config configures the updater; Token, Product and Target are required.
type Config struct {
	Token    string        // IP2LOCATION_TOKEN
	Product  string        // IP2LOCATION_PRODUCT, e.g. DB11LITEBINIPV6
	Interval time.Duration // GEOIP_UPDATE_INTERVAL; default 24h
	Target   string        // where the database file lives (GEOIP_DB, or a cache path)
	URL      string        // default DefaultURL
	Client   *http.Client  // default: a client with a 30-minute timeout
	MaxBytes int64         // download and unpacked size limit; default 4 GiB
	Logger   *slog.Logger
}

// Updater downloads and installs database updates.
type Updater struct {
	cfg      Config
	inst     Installer
	secrets  []string // redacted from every error and log line, longest first
	attempts prometheus.Counter
	failures prometheus.Counter
	last     prometheus.Gauge
	// syncFile is (*os.File).Sync; tests record when it runs.
	syncFile func(*os.File) error
}

// New checks cfg and returns an Updater.
func New(cfg Config, inst Installer) (*Updater, error) {
	if cfg.Token == "" || cfg.Product == "" {
		return nil, errors.New("updater: IP2LOCATION_TOKEN and IP2LOCATION_PRODUCT are both required")
	}
	if cfg.Target == "" {
		return nil, errors.New("updater: no target path for the downloaded database")
	}
	if cfg.Interval == 0 {
		cfg.Interval = 24 * time.Hour
	}
	if cfg.Interval < time.Minute {
		return nil, fmt.Errorf("updater: interval %s is too short (IP2Location limits downloads)", cfg.Interval)
	}
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Minute}
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 4 << 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Updater{
		cfg:      cfg,
		inst:     inst,
		secrets:  secretsOf(cfg),
		syncFile: (*os.File).Sync,
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoip_database_update_attempts_total",
			Help: "Downloads of the database product attempted.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoip_database_update_failures_total",
			Help: "Database downloads that failed to download, unpack, verify or install.",
		}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "geoip_database_update_last_success_timestamp_seconds",
			Help: "When a downloaded database was last installed, as a Unix time.",
		}),
	}, nil
}

// RegisterMetrics registers the updater's metrics on reg.
func (u *Updater) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{u.attempts, u.failures, u.last} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Run updates now if the target is missing or older than the interval, then once per
// interval, until ctx ends. Failures are logged and wait for the next round.
func (u *Updater) Run(ctx context.Context) {
	wait := time.Duration(0)
	if st, err := os.Stat(u.cfg.Target); err == nil {
		if age := time.Since(st.ModTime()); age < u.cfg.Interval {
			wait = u.cfg.Interval - age
		}
	}
	u.cfg.Logger.Info("database updater started", "product", u.cfg.Product, "interval", u.cfg.Interval.String(), "next_in", wait.String())
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := u.Update(ctx); err != nil && ctx.Err() == nil {
			u.cfg.Logger.Error("database update failed; the current database keeps serving", "product", u.cfg.Product, "err", err)
		}
		t.Reset(u.cfg.Interval)
	}
}

// Update downloads, unpacks and installs the product once. Its error never holds the
// token or any other secret of the download URL (see redact): errors from the HTTP client
// quote the URL, and the service's text answers may echo it.
func (u *Updater) Update(ctx context.Context) error {
	u.attempts.Inc()
	err := u.update(ctx)
	if err != nil {
		u.failures.Inc()
		return errors.New(u.redact(err.Error())) // the chain is dropped: it holds the secrets
	}
	u.last.SetToCurrentTime()
	u.cfg.Logger.Info("database updated", "product", u.cfg.Product, "path", u.cfg.Target)
	return nil
}

func (u *Updater) update(ctx context.Context) error {
	dir := filepath.Dir(u.cfg.Target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	archive, err := u.download(ctx, dir)
	if err != nil {
		return err
	}
	defer os.Remove(archive)
	db, err := u.unpack(archive, dir)
	if err != nil {
		return err
	}
	defer os.Remove(db) // gone already when installed
	if err := u.inst.InstallFile(db, u.cfg.Target); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

func (u *Updater) download(ctx context.Context, dir string) (string, error) {
	q := url.Values{"token": {u.cfg.Token}, "file": {u.cfg.Product}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.cfg.URL+"?"+q.Encode(), nil)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", u.cfg.Product, err)
	}
	resp, err := u.cfg.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", u.cfg.Product, err) // quotes the URL: Update redacts
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download %s: status %s", u.cfg.Product, resp.Status)
	}
	f, err := os.CreateTemp(dir, ".geoip-download-*.zip")
	if err != nil {
		return "", fmt.Errorf("download %s: %w", u.cfg.Product, err)
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
		return "", fmt.Errorf("download %s: %w", u.cfg.Product, err)
	}
	if msg, ok := serviceMessage(f.Name()); ok {
		os.Remove(f.Name())
		return "", fmt.Errorf("download %s: the service answered %q instead of a zip", u.cfg.Product, msg)
	}
	return f.Name(), nil
}

// serviceMessage reports the text the service sends instead of a zip for a bad token, an
// unknown product or too many downloads.
func serviceMessage(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	buf := make([]byte, 200)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	if bytes.HasPrefix(buf, []byte("PK")) {
		return "", false
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(buf), "?")), true
}

// unpack extracts the database (.BIN or .MMDB, the largest if several) beside the target.
func (u *Updater) unpack(archive, dir string) (string, error) {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", u.cfg.Product, err)
	}
	defer zr.Close()
	var best *zip.File
	for _, f := range zr.File {
		ext := strings.ToLower(filepath.Ext(f.Name))
		if (ext == ".bin" || ext == ".mmdb") && (best == nil || f.UncompressedSize64 > best.UncompressedSize64) {
			best = f
		}
	}
	if best == nil {
		return "", fmt.Errorf("unpack %s: no .BIN or .MMDB file in the archive", u.cfg.Product)
	}
	if best.UncompressedSize64 > uint64(u.cfg.MaxBytes) {
		return "", fmt.Errorf("unpack %s: %s is larger than %d bytes", u.cfg.Product, best.Name, u.cfg.MaxBytes)
	}
	rc, err := best.Open()
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", u.cfg.Product, err)
	}
	defer rc.Close()
	// Keep the database's extension: the installer opens files by it.
	out, err := os.CreateTemp(dir, ".geoip-update-*"+strings.ToLower(filepath.Ext(best.Name)))
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", u.cfg.Product, err)
	}
	n, err := io.Copy(out, io.LimitReader(rc, u.cfg.MaxBytes+1))
	if err == nil && n > u.cfg.MaxBytes {
		err = fmt.Errorf("%s is larger than %d bytes", best.Name, u.cfg.MaxBytes)
	}
	if err == nil {
		// On disk before the installer renames it over the serving file: renamed
		// first, a crash could leave the target name on a file without its data.
		err = u.syncFile(out)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(out.Name(), 0o644)
	}
	if err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("unpack %s: %w", u.cfg.Product, err)
	}
	return out.Name(), nil
}

// secretsOf lists what must never be logged: the token as given and as escaped in a URL,
// and the credentials and query values of a configured URL (a mirror's key, say).
func secretsOf(cfg Config) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 3 { // shorter values would redact ordinary words
			out = append(out, v, url.QueryEscape(v), url.PathEscape(v))
		}
	}
	add(cfg.Token)
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
// redirect's, say): the values of credential-like query parameters, and user:password@.
var (
	secretParam = regexp.MustCompile(`(?i)\b(token|key|apikey|api_key|access_token|secret|password|passwd|auth|sig|signature)=[^&\s"'<>]+`)
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
