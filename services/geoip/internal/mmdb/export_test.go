package mmdb

import "net/netip"

// DecodeFlatInPlace is decodeFlatInPlace on db's data section.
func DecodeFlatInPlace(db *DB, off uint) (FlatRecord, bool) { return decodeFlatInPlace(db.data, off) }

// Data is db's data section.
func Data(db *DB) []byte { return db.data }

// Search is db's search of addr (valid, unmapped, of the file's family), and whether it
// used the IPv4 index.
func Search(db *DB, addr netip.Addr) (off uint, network netip.Prefix, found, indexed bool, err error) {
	off, network, found, err = db.search(addr)
	return off, network, found, db.idx4 != nil && addr.Is4(), err
}
