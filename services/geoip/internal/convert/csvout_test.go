package convert

import (
	"bytes"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
)

// TestCSVOutputReadsBack writes ranges of both families as CSV and reads the
// file back into a BIN equal to the one written directly; an IPv6 range that
// would read back as IPv4 is refused.
func TestCSVOutputReadsBack(t *testing.T) {
	c := newConverter(Options{})
	loc := binwriter.Location{Country: "FR", CountryName: "France", Region: "Île-de-France", City: "Paris, \"centre\"",
		TimeZone: "Europe/Paris", Latitude: 48.8566, Longitude: 2.3522}
	id, err := c.intern(loc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{{"1.2.3.0", "1.2.3.255"}, {"2a01::", "2a01::ffff"}} {
		if err := c.b.AddRange(netip.MustParseAddr(r[0]), netip.MustParseAddr(r[1]), id); err != nil {
			t.Fatal(err)
		}
	}
	var text, direct bytes.Buffer
	st, err := c.writeCSV(&text)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows4 != 1 || st.Rows6 != 1 || st.Locations != 1 || st.Bytes != int64(text.Len()) {
		t.Errorf("stats %+v for %d bytes", st, text.Len())
	}
	date := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	c.opts.Date = date
	if _, err := c.write(&direct); err != nil {
		t.Fatal(err)
	}
	got, err := BIN(bytes.NewReader(text.Bytes()), Options{Date: date})
	if err != nil {
		t.Fatalf("%v in\n%s", err, text.String())
	}
	if !bytes.Equal(got, direct.Bytes()) {
		t.Errorf("the BIN read back from the CSV differs:\n%s", text.String())
	}

	low := newConverter(Options{})
	id, _ = low.intern(loc)
	if err := low.b.AddRange(netip.MustParseAddr("::1"), netip.MustParseAddr("::2"), id); err != nil {
		t.Fatal(err)
	}
	if _, err := low.writeCSV(io.Discard); err == nil || !strings.Contains(err.Error(), "read back as IPv4") {
		t.Errorf("an IPv6 range below 2^32: %v", err)
	}
}
