package redisstore

import "strings"

// keySlot is the Redis Cluster hash slot of key, as the Cluster
// specification defines it: CRC16 (XMODEM) of the key's hash tag (what is
// between its first "{" and the first "}" after it, when not empty), or of
// the whole key when it has none, modulo 16384. go-redis computes the same
// but does not export it.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % 16384
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the variant Redis Cluster uses.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
