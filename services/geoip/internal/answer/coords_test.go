package answer

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/geoip/internal/binwriter"
	"github.com/apistack/platform/services/geoip/internal/dbfile"
)

// Issue 46: an MMDB answer printed "latitude": 37.422000885009766 where the BIN printed
// 37.422, the file's 32-bit coordinate widened to float64 and printed whole. Both formats
// now print the shortest decimal of the float32, in every format the answer has.
func TestCoordinatesPrintTheirFloat32AlikeFromBINAndMMDB(t *testing.T) {
	dir := t.TempDir()
	b := binwriter.NewBuilder()
	id := b.Intern(binwriter.Location{Country: "US", City: "Mountain View", Latitude: 37.422, Longitude: -122.084})
	if err := b.AddPrefix(netip.MustParsePrefix("8.8.8.0/24"), id); err != nil {
		t.Fatal(err)
	}
	var bin bytes.Buffer
	if _, err := b.Write(&bin, binwriter.Options{}); err != nil {
		t.Fatal(err)
	}
	binPath := filepath.Join(dir, "db.BIN")
	if err := os.WriteFile(binPath, bin.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 28, IPVersion: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("8.8.8.0/24")
	if err := tree.Insert(n, mmdbtype.Map{
		"country": mmdbtype.Map{"iso_code": mmdbtype.String("US")},
		"city":    mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String("Mountain View")}},
		"location": mmdbtype.Map{
			"latitude":  mmdbtype.Float64(float64(float32(37.422))), // 37.422000885009766
			"longitude": mmdbtype.Float64(float64(float32(-122.084))),
			"time_zone": mmdbtype.String("America/Los_Angeles"),
		},
	}); err != nil {
		t.Fatal(err)
	}
	mmdbPath := filepath.Join(dir, "db.mmdb")
	f, err := os.Create(mmdbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{binPath, mmdbPath} {
		t.Run(filepath.Ext(path), func(t *testing.T) {
			m, err := dbfile.New(dbfile.Config{Path: path, PollInterval: -1, Logger: testkit.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			e := New(m, Options{})
			body, _, _, err := e.Answer(netip.MustParseAddr("8.8.8.8"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(body, []byte(`"latitude":37.422,"longitude":-122.084,`)) {
				t.Errorf("JSON %s", body)
			}
			loc, _, err := e.Record(netip.MustParseAddr("8.8.8.8"))
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendYAML(nil, &loc); !bytes.Contains(got, []byte("latitude: 37.422\n")) {
				t.Errorf("YAML %s", got)
			}
			if got := string(AppendXML(nil, &loc)); !strings.Contains(got, "<latitude>37.422</latitude>") {
				t.Errorf("XML %s", got)
			}
			for name, want := range map[string]string{"latitude": "37.422", "longitude": "-122.084", "latlong": "37.422,-122.084"} {
				get, ok := TextField(name)
				if !ok {
					t.Fatalf("no text field %s", name)
				}
				if got := get(&loc); got != want {
					t.Errorf("field %s: %q, want %q", name, got, want)
				}
			}
		})
	}
}
