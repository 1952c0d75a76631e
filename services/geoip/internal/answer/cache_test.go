package answer

import (
	"net/netip"
	"testing"
	"time"
)

// Two addresses of one slot: each answer is found only for its own address (the tag
// decides without reading the answer, the address itself after), the newer replaces the
// older, and admission follows the last address that missed there.
func TestAnswerCacheSlotsAnswerOnlyTheirAddress(t *testing.T) {
	c := newAnswerCache(16, time.Minute)
	now := time.Now()
	a := netip.MustParseAddr("192.0.2.1")
	i, _, _ := c.slotOf(a)
	var b netip.Addr
	for n := 2; !b.IsValid(); n++ {
		x := netip.AddrFrom4([4]byte{198, 51, byte(n >> 8), byte(n)})
		if j, _, _ := c.slotOf(x); j == i {
			b = x
		}
	}
	if c.admit(a) || !c.admit(a) {
		t.Fatal("an address is admitted on its second miss")
	}
	c.put(a, &entry{version: "v1"}, now)
	if got := c.get(a, "v1", now); got == nil || got.addr != a {
		t.Fatalf("%s: its answer is not found", a)
	}
	if got := c.get(b, "v1", now); got != nil {
		t.Fatalf("%s: answered with %s's answer", b, got.addr)
	}
	if c.admit(b) {
		t.Fatalf("%s admitted on its first miss", b)
	}
	if c.admit(a) {
		t.Fatalf("%s still admitted after %s missed in its slot", a, b)
	}
	c.put(b, &entry{version: "v1"}, now)
	if c.get(a, "v1", now) != nil || c.get(b, "v1", now) == nil {
		t.Fatal("the newer answer does not replace the older one")
	}
	if c.get(b, "v2", now) != nil || c.get(b, "v1", now.Add(time.Minute)) != nil {
		t.Fatal("answered for another database version or after the TTL")
	}
	c.purge()
	if c.get(b, "v1", now) != nil || c.len() != 0 {
		t.Fatal("answered after purge")
	}
}
