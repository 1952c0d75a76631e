package ratelimit

import (
	"hash/maphash"
	"math/bits"
	"sync"
)

// expiring is a table value that becomes worthless at expiry() (in the
// owner's nanosecond clock): deleting it then loses no information.
type expiring interface{ expiry() int64 }

// table is a bounded map split into independently locked shards, so that
// concurrent requests for different keys rarely contend.
//
// Memory stays bounded without a background goroutine: each shard holds at
// most perShard entries; inserting into a full shard first drops expired
// entries among a random sample and, failing that, the sampled entry that
// expires soonest (the least valuable one: closest to being forgotten
// anyway). Each shard also drops all of its expired entries at most once per
// sweepEvery, so idle keys go away even without pressure.
type table[K comparable, V expiring] struct {
	shards     []shard[K, V]
	mask       uint64
	seed       maphash.Seed
	perShard   int
	sweepEvery int64
}

type shard[K comparable, V expiring] struct {
	mu        sync.Mutex
	m         map[K]V
	nextSweep int64
	// Keep neighbouring shards' mutexes off one cache line.
	_ [40]byte
}

const (
	maxShards = 128
	// Below this many keys per shard, fewer shards are used instead, so that
	// small bounds (tests, tiny deployments) stay exact.
	minPerShard = 64
	// evictSample is how many entries an insert into a full shard looks at.
	evictSample = 8
)

func newTable[K comparable, V expiring](maxKeys int, sweepEvery int64) *table[K, V] {
	n := 1
	if maxKeys/minPerShard > 1 {
		n = 1 << (bits.Len(uint(maxKeys/minPerShard)) - 1) // largest power of two <= maxKeys/minPerShard
	}
	n = min(n, maxShards)
	t := &table[K, V]{
		shards:     make([]shard[K, V], n),
		mask:       uint64(n - 1),
		seed:       maphash.MakeSeed(),
		perShard:   (maxKeys + n - 1) / n,
		sweepEvery: sweepEvery,
	}
	for i := range t.shards {
		t.shards[i].m = make(map[K]V)
	}
	return t
}

// shardFor picks the shard by the string part of the key.
func (t *table[K, V]) shardFor(s string) *shard[K, V] {
	return &t.shards[maphash.String(t.seed, s)&t.mask]
}

// maintain runs the periodic sweep; call with the shard locked.
func (sh *shard[K, V]) maintain(now, sweepEvery int64) {
	if now < sh.nextSweep {
		return
	}
	sh.nextSweep = now + sweepEvery
	for k, v := range sh.m {
		if v.expiry() <= now {
			delete(sh.m, k)
		}
	}
}

// makeRoom ensures one more entry fits; call with the shard locked, before
// inserting a new key.
func (sh *shard[K, V]) makeRoom(now int64, perShard int) {
	if len(sh.m) < perShard {
		return
	}
	var (
		victim  K
		soonest int64
		seen    int
		freed   bool
	)
	// Map iteration starts at a random position, which makes this a random
	// sample, as in Redis' approximate eviction.
	for k, v := range sh.m {
		if e := v.expiry(); e <= now {
			delete(sh.m, k)
			freed = true
		} else if seen == 0 || e < soonest {
			victim, soonest = k, e
		}
		seen++
		if seen >= evictSample {
			break
		}
	}
	if !freed {
		delete(sh.m, victim)
	}
}

// len counts entries; for tests and metrics, it locks every shard in turn.
func (t *table[K, V]) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
