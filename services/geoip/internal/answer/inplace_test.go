package answer

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/apistack/platform/libs/apiserver/testkit"
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
		PollInterval: -1, Logger: testkit.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e := New(m, Options{})
	jsonOf := func(ip string) string {
		t.Helper()
		body, _, _, err := e.Answer(netip.MustParseAddr(ip))
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	xmlOf := func(ip string) string {
		t.Helper()
		loc, _, err := e.Record(netip.MustParseAddr(ip))
		if err != nil {
			t.Fatal(err)
		}
		return string(AppendXML(nil, &loc))
	}

	// 8.8.8.8 is asked twice, so its answer is cached (admission on the second miss).
	jsonOf("8.8.8.8")
	wantJSON := jsonOf("8.8.8.8")
	wantXML := xmlOf("8.8.8.8")
	if !bytes.Contains([]byte(wantJSON), []byte(`"city":"Mountain View"`)) {
		t.Fatalf("unexpected answer %s", wantJSON)
	}
	// A record resolved for another format, with the cache not involved.
	loc, _, err := e.Record(netip.MustParseAddr("9.9.9.9"))
	if err != nil {
		t.Fatal(err)
	}
	city, region := loc.City, loc.Region
	if city == "" || region == "" {
		t.Fatalf("9.9.9.9: %+v", loc)
	}
	cityCopy, regionCopy := string([]byte(city)), string([]byte(region))

	for i := range data {
		data[i] = 'x'
	}
	if got := jsonOf("8.8.8.8"); got != wantJSON {
		t.Errorf("cached JSON changed with the file:\n%s\nwant\n%s", got, wantJSON)
	}
	if got := xmlOf("8.8.8.8"); got != wantXML {
		t.Errorf("cached record changed with the file:\n%s\nwant\n%s", got, wantXML)
	}
	if loc.City != cityCopy || loc.Region != regionCopy {
		t.Errorf("resolved record changed with the file: %q, %q; want %q, %q", loc.City, loc.Region, cityCopy, regionCopy)
	}
}
