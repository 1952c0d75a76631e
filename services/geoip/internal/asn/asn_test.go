package asn_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/apistack/platform/services/geoip/internal/asn"
)

// Fixture builds an ASN database the way MaxMind (GeoLite2-ASN, IPv6 tree holding IPv4) or
// DB-IP (ASN Lite) lay theirs out; both use the same two keys.
func Fixture(t testing.TB, dbType string, ipVersion int) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 24, IPVersion: ipVersion})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, as := range map[string]struct {
		n   uint32
		org string
	}{
		"8.8.8.0/24":     {15169, "Google LLC"},
		"1.1.1.0/24":     {13335, "Cloudflare, Inc."},
		"2001:4860::/32": {15169, "Google LLC"},
	} {
		if ipVersion == 4 && netip.MustParsePrefix(cidr).Addr().Is6() {
			continue
		}
		_, n, _ := net.ParseCIDR(cidr)
		if err := tree.Insert(n, mmdbtype.Map{
			"autonomous_system_number":       mmdbtype.Uint32(as.n),
			"autonomous_system_organization": mmdbtype.String(as.org),
		}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestLookupBothLayouts(t *testing.T) {
	for _, layout := range []struct {
		dbType string
		ipv    int
	}{{"GeoLite2-ASN", 6}, {"DBIP-ASN-Lite (compat=GeoLite2-ASN)", 6}, {"DBIP-ASN-Lite", 4}} {
		t.Run(layout.dbType, func(t *testing.T) {
			db, err := asn.OpenBytes(Fixture(t, layout.dbType, layout.ipv), "fixture")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tests := []struct {
				addr, org, network string
				n                  uint32
			}{
				{"8.8.8.8", "Google LLC", "8.8.8.0/24", 15169},
				{"::ffff:1.1.1.1", "Cloudflare, Inc.", "1.1.1.0/24", 13335},
				{"9.9.9.9", "", "", 0},
				{"2001:4860:4860::8888", "Google LLC", "2001:4860::/32", 15169},
			}
			for _, tt := range tests {
				if layout.ipv == 4 && tt.addr == "2001:4860:4860::8888" {
					tt.org, tt.network, tt.n = "", "", 0
				}
				rec, err := db.Lookup(netip.MustParseAddr(tt.addr))
				if err != nil {
					t.Fatal(err)
				}
				network := ""
				if rec.Network.IsValid() {
					network = rec.Network.String()
				}
				if rec.ASN != tt.n || rec.Org != tt.org || network != tt.network {
					t.Errorf("%s: AS%d %q %s, want AS%d %q %s", tt.addr, rec.ASN, rec.Org, network, tt.n, tt.org, tt.network)
				}
			}
			if info := db.Info(); info.Type != layout.dbType || info.Records == 0 || info.Checksum == "" {
				t.Errorf("info %+v", info)
			}
		})
	}
}

func TestOpenRefusesACityDatabase(t *testing.T) {
	tree, _ := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 24, IPVersion: 4})
	_, n, _ := net.ParseCIDR("1.1.1.0/24")
	if err := tree.Insert(n, mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String("AU")}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := asn.OpenBytes(buf.Bytes(), "city"); err == nil {
		t.Error("opened a city database as an ASN database")
	}
	if _, err := asn.OpenBytes([]byte("junk"), "junk"); err == nil {
		t.Error("opened junk")
	}
}
