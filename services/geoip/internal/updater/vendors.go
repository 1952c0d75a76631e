package updater

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The sources the updater speaks, GEOIP_UPDATE_SOURCE's values.
const (
	SourceIP2Location = "ip2location"
	SourceMaxMind     = "maxmind"
	SourceDBIP        = "dbip"
)

// Each source's public endpoint; Config.URL replaces it (a mirror, or a test's server).
const (
	// DefaultURL is IP2Location's download endpoint: GET ?token=T&file=PRODUCT answers a
	// zip holding the .BIN (or .MMDB), or, with status 200, a short text such as
	// "NO PERMISSION" for a bad token or an unknown product.
	DefaultURL = "https://www.ip2location.com/download/"
	// DefaultMaxMindURL is MaxMind's download host: GET
	// /geoip/databases/{EditionID}/download?suffix=tar.gz with HTTP Basic auth (account ID,
	// license key) redirects to a presigned storage URL serving EDITION_YYYYMMDD.tar.gz,
	// whose EDITION_YYYYMMDD/EDITION.mmdb is the database; suffix=tar.gz.sha256 answers
	// "<hex SHA-256>  EDITION_YYYYMMDD.tar.gz". 401 refuses the credentials.
	DefaultMaxMindURL = "https://download.maxmind.com"
	// DefaultDBIPURL is where DB-IP publishes its free Lite files, one per month and
	// kind, named for the month: dbip-city-lite-2026-12.mmdb.gz, dbip-asn-lite-2026-12.mmdb.gz
	// (gzip of one MMDB; no key, CC BY 4.0). A month's file appears in its first days.
	DefaultDBIPURL = "https://download.db-ip.com/free/"
)

// candidate is one file to ask for: url may carry a secret (IP2Location's token in the
// query), key never does and is what the conditional state remembers.
type candidate struct{ url, key string }

// vendor is what differs between the sources: where an edition is, how to sign the
// request, how the file is packed and where its published checksum is.
type vendor interface {
	// candidates lists the files to ask for edition, in order: a 404 moves to the next.
	candidates(edition string, now time.Time) []candidate
	authorize(req *http.Request)
	format() archiveFormat
	// checksumURL is where c's published SHA-256 is; "" when the source publishes none.
	checksumURL(c candidate) string
}

func newVendor(cfg Config) (vendor, error) {
	base := cfg.URL
	switch cfg.Source {
	case SourceIP2Location:
		if base == "" {
			base = DefaultURL
		}
		return ip2location{base: base, token: cfg.Token}, nil
	case SourceMaxMind:
		if base == "" {
			base = DefaultMaxMindURL
		}
		return maxmind{base: strings.TrimRight(base, "/"), account: cfg.AccountID, key: cfg.LicenseKey}, nil
	case SourceDBIP:
		if base == "" {
			base = DefaultDBIPURL
		}
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		return dbip{base: base}, nil
	}
	return nil, fmt.Errorf("updater: unknown source %q (want %s, %s or %s)", cfg.Source, SourceIP2Location, SourceMaxMind, SourceDBIP)
}

type ip2location struct{ base, token string }

func (v ip2location) candidates(edition string, _ time.Time) []candidate {
	q := url.Values{"token": {v.token}, "file": {edition}}
	return []candidate{{url: v.base + "?" + q.Encode(), key: edition}}
}
func (ip2location) authorize(*http.Request)      {}
func (ip2location) format() archiveFormat        { return formatZip }
func (ip2location) checksumURL(candidate) string { return "" }

type maxmind struct{ base, account, key string }

func (v maxmind) candidates(edition string, _ time.Time) []candidate {
	return []candidate{{url: v.base + "/geoip/databases/" + url.PathEscape(edition) + "/download?suffix=tar.gz", key: edition}}
}

// authorize signs with Basic auth; the client drops the header when a redirect leaves the
// host (see New), so the presigned storage URL never sees the license key.
func (v maxmind) authorize(req *http.Request) { req.SetBasicAuth(v.account, v.key) }
func (maxmind) format() archiveFormat         { return formatTarGz }
func (maxmind) checksumURL(c candidate) string {
	return strings.TrimSuffix(c.url, "suffix=tar.gz") + "suffix=tar.gz.sha256"
}

type dbip struct{ base string }

// candidates are this month's file, then last month's: a month's file appears only in
// its first days, and until then last month's is the newest.
func (v dbip) candidates(edition string, now time.Time) []candidate {
	now = now.UTC()
	this := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	var out []candidate
	for _, month := range []time.Time{this, this.AddDate(0, -1, 0)} {
		name := edition + "-" + month.Format("2006-01") + ".mmdb.gz"
		out = append(out, candidate{url: v.base + url.PathEscape(name), key: name})
	}
	return out
}
func (dbip) authorize(*http.Request)      {}
func (dbip) format() archiveFormat        { return formatGz }
func (dbip) checksumURL(candidate) string { return "" }
