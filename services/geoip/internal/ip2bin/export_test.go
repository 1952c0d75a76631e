package ip2bin

import "github.com/ip2location/ip2location-go/v9"

// ReaderOf exposes the in-memory reader to benchmarks.
func ReaderOf(data []byte) ip2location.DBReader { return &memReader{data: data} }
