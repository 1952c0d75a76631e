package ip2bin_test

import (
	"net/netip"
	"testing"

	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/ip2bin"
)

func TestNetworkIsTheLargestBlockInsideTheRow(t *testing.T) {
	for _, layout := range []struct {
		name string
		opts binwriter.Options
	}{{"indexed", binwriter.Options{}}, {"no index", binwriter.Options{NoIndex: true}}} {
		t.Run(layout.name, func(t *testing.T) {
			b := binwriter.NewBuilder()
			for _, r := range []struct{ from, to string }{
				{"8.8.8.0", "8.8.8.255"}, // one /24
				{"9.0.0.3", "9.0.0.130"}, // not a CIDR block: it depends on the address
				{"255.255.255.0", "255.255.255.255"},
				{"2001:4860::", "2001:4860:ffff:ffff:ffff:ffff:ffff:ffff"},
				{"2a00::", "2a00::ffff"},
				{"ffff::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
			} {
				if err := b.AddRange(netip.MustParseAddr(r.from), netip.MustParseAddr(r.to), b.Intern(mountainView)); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytesBuffer
			if _, err := b.Write(&buf, layout.opts); err != nil {
				t.Fatal(err)
			}
			db, err := ip2bin.OpenBytes(buf.b, "fixture")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for addr, want := range map[string]string{
				"8.8.8.8":              "8.8.8.0/24",
				"8.8.8.0":              "8.8.8.0/24",
				"8.8.8.255":            "8.8.8.0/24",
				"9.0.0.3":              "9.0.0.3/32",
				"9.0.0.4":              "9.0.0.4/30",
				"9.0.0.100":            "9.0.0.64/26",
				"9.0.0.129":            "9.0.0.128/31",
				"9.0.0.130":            "9.0.0.130/32",
				"255.255.255.255":      "255.255.255.0/24",
				"2001:4860:4860::8888": "2001:4860::/32",
				"2a00::1":              "2a00::/112",
				"ffff::1":              "ffff::/16",
				"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff": "ffff::/16",
				"::ffff:8.8.8.8": "8.8.8.0/24",
				"8.8.9.1":        "", // a gap: no data, no network
				// 6to4 and Teredo carry an IPv4 address and are answered from its row: the
				// network is the IPv6 block carrying that row's IPv4 block.
				"2002:808:808::1":                      "2002:808:800::/40",
				"2002:900:64::":                        "2002:900:40::/42",
				"2002:809:101::1":                      "",                                         // 8.9.1.1: no data
				"2001:0:4136:e378:8000:63bf:f7f7:f7f7": "2001:0:4136:e378:8000:63bf:f7f7:f700/120", // client 8.8.8.8
				"2001:0:4136:e378:8000:63bf:f6ff:ff9b": "2001:0:4136:e378:8000:63bf:f6ff:ff80/122", // client 9.0.0.100
			} {
				rec, err := db.Lookup(netip.MustParseAddr(addr))
				if err != nil {
					t.Fatal(err)
				}
				got := ""
				if rec.Network.IsValid() {
					got = rec.Network.String()
				}
				if got != want {
					t.Errorf("%s: network %q, want %q", addr, got, want)
				}
			}
		})
	}
}

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
