package ip2bin

import "github.com/ip2location/ip2location-go/v9"

// ReaderOf exposes the in-memory reader to benchmarks.
func ReaderOf(data []byte) ip2location.DBReader { return &memReader{data: data} }

// Verify runs the whole-file check alone, for the benchmark that prices it.
func Verify(data []byte) error {
	h, err := parseHeader(data, int64(len(data)))
	if err != nil {
		return err
	}
	return verify(data, h)
}
