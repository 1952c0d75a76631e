package mmdb

import (
	"math/bits"
	"sort"
)

// zoneTable names the time zone of the flat records that have coordinates and no zone
// (DB-IP's have none), found once when the file loads (NameZones) rather than at each
// lookup: the polygons it takes (tz.Namer, about 100 MB of heap) are then freed, where the
// service otherwise kept them loaded for the life of the process, and a lookup reads its
// zone from a binary search of 2.5 MB instead of a polygon search.
type zoneTable struct {
	offs    []uint32 // record offsets, ascending (off the Go heap, as zone)
	zone    []uint16 // names index of each
	names   []string
	release []func() error
}

// at is the zone of the record at off; ok is false for a record the table has not named.
func (t *zoneTable) at(off uint) (string, bool) {
	if t == nil {
		return "", false
	}
	i := sort.Search(len(t.offs), func(i int) bool { return uint(t.offs[i]) >= off })
	if i == len(t.offs) || uint(t.offs[i]) != off {
		return "", false
	}
	return t.names[t.zone[i]], true
}

// NameZones names the zone of every flat record that has coordinates and no zone name,
// once, with the search namer returns (tz.Namer), asked for only if a record needs it:
// lookups then answer with that zone, and the file's Info says ZoneNames (no lookup needs
// the polygons) when every located record has one. Call it before the database serves; a
// file of the nested layout is left as it is. An error of namer's leaves the file as it
// was: the lookups' time zones name the zones.
func (d *DB) NameZones(namer func() (func(lat, lon float64) string, error)) error {
	if d.schema != SchemaFlat || d.data == nil || len(d.data) > 1<<32 {
		return nil
	}
	var name func(lat, lon float64) string
	md := d.r.Metadata
	size := md.NodeCount * md.RecordSize / 4
	if size > uint(len(d.raw)) || (md.RecordSize != 24 && md.RecordSize != 28 && md.RecordSize != 32) {
		return nil
	}
	tree := d.raw[:size]
	// Every record the tree points to, once, in order of offset.
	seen := make([]uint64, (len(d.data)+63)/64)
	for node := range md.NodeCount {
		for bit := range uint(2) {
			v := treeRecord(tree, md.RecordSize, node, bit)
			if v > md.NodeCount {
				if off := v - md.NodeCount - 16; off < uint(len(d.data)) {
					seen[off/64] |= 1 << (off % 64)
				}
			}
		}
	}
	t := &zoneTable{}
	index := map[string]uint16{}
	type point struct{ lat, lon float64 }
	memo := map[point]uint16{} // many records share coordinates
	all := true
	for w, word := range seen {
		for word != 0 {
			off := uint(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
			f, ok := decodeFlatInPlace(d.data, off)
			if !ok || f.Timezone != "" || (f.Latitude == 0 && f.Longitude == 0) {
				continue // not ours to name: the lookup reads it as before
			}
			p := point{f.Latitude, f.Longitude}
			z, ok := memo[p]
			if !ok {
				if name == nil {
					var err error
					if name, err = namer(); err != nil {
						return err
					}
				}
				n := name(p.lat, p.lon)
				if n == "" {
					all = false
					continue // left to the lookup's time zones, as before
				}
				if z, ok = index[n]; !ok {
					if len(t.names) == 1<<16 {
						return nil // not zone names: leave them to the lookups
					}
					z = uint16(len(t.names))
					index[n] = z
					t.names = append(t.names, n)
				}
				memo[p] = z
			}
			t.offs = append(t.offs, uint32(off))
			t.zone = append(t.zone, z)
		}
	}
	// Off the Go heap, as the IPv4 index (offHeap); the slices built here are garbage.
	offs, r1 := offHeap[uint32](len(t.offs))
	zone, r2 := offHeap[uint16](len(t.zone))
	copy(offs, t.offs)
	copy(zone, t.zone)
	t.offs, t.zone, t.release = offs, zone, []func() error{r1, r2}
	d.zones = t
	d.info.ZoneNames = all
	return nil
}
