package httpapi

import (
	"bytes"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/dbfile"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
	"github.com/apistack/platform/services/geoip/internal/lookup"
	"github.com/apistack/platform/services/geoip/internal/sample"
)

// TestAnswersKeptPastTheLeaseAreCopies: records are read in place from the BIN's memory
// (dbfile.Manager.Borrow), so whatever outlives the request (the answer cache, the record
// the other formats write) must be a copy. Here the file's bytes are overwritten after the
// answers were made, as unmapping a replaced database would do to them: the kept answers
// must not change.
func TestAnswersKeptPastTheLeaseAreCopies(t *testing.T) {
	data := bytes.Clone(sample.Bytes())
	m, err := dbfile.New(dbfile.Config{
		Fallback:     func() (lookup.DB, error) { return ip2bin.OpenBytes(data, "copy of the sample") },
		PollInterval: -1, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s := newTestServer(t, m)

	// 8.8.8.8 is asked twice, so its answer is cached (admission on the second miss).
	s.get("/8.8.8.8/json/")
	wantJSON := s.get("/8.8.8.8/json/").Body.String()
	wantXML := s.get("/8.8.8.8/xml/").Body.String()
	if !bytes.Contains([]byte(wantJSON), []byte(`"city":"Mountain View"`)) {
		t.Fatalf("unexpected answer %s", wantJSON)
	}
	// A record resolved for another format, with the cache not involved.
	var ans answer
	if err := s.api.resolve(netip.MustParseAddr("9.9.9.9"), &ans, true); err != nil {
		t.Fatal(err)
	}
	city, region := ans.loc.City, ans.loc.Region
	if city == "" || region == "" {
		t.Fatalf("9.9.9.9: %+v", ans.loc)
	}
	cityCopy, regionCopy := string([]byte(city)), string([]byte(region))

	for i := range data {
		data[i] = 'x'
	}
	if got := s.get("/8.8.8.8/json/").Body.String(); got != wantJSON {
		t.Errorf("cached JSON changed with the file:\n%s\nwant\n%s", got, wantJSON)
	}
	if got := s.get("/8.8.8.8/xml/").Body.String(); got != wantXML {
		t.Errorf("cached record changed with the file:\n%s\nwant\n%s", got, wantXML)
	}
	if ans.loc.City != cityCopy || ans.loc.Region != regionCopy {
		t.Errorf("resolved record changed with the file: %q, %q; want %q, %q", ans.loc.City, ans.loc.Region, cityCopy, regionCopy)
	}
}
