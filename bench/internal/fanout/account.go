package fanout

import (
	"math/bits"
	"sync/atomic"
)

// SentSet records which sequence numbers the server acknowledged; safe for
// concurrent use by the send workers.
type SentSet struct {
	words []atomic.Uint64
	n     atomic.Int64
}

// NewSentSet holds sequence numbers 0..capacity-1.
func NewSentSet(capacity int64) *SentSet {
	return &SentSet{words: make([]atomic.Uint64, (capacity+63)/64)}
}

// Mark records seq as acknowledged.
func (s *SentSet) Mark(seq int64) {
	if seq < 0 || seq/64 >= int64(len(s.words)) {
		return
	}
	if s.words[seq/64].Or(1<<(seq%64))&(1<<(seq%64)) == 0 {
		s.n.Add(1)
	}
}

// Has reports whether seq was acknowledged.
func (s *SentSet) Has(seq int64) bool {
	if seq < 0 || seq/64 >= int64(len(s.words)) {
		return false
	}
	return s.words[seq/64].Load()&(1<<(seq%64)) != 0
}

// Len is the number of acknowledged sequence numbers.
func (s *SentSet) Len() int64 { return s.n.Load() }

// Tally is one subscriber's account of measured messages. Add is called by the
// subscriber's reader only; Unique may be read concurrently.
type Tally struct {
	got        []uint64
	unique     atomic.Int64
	Received   int64 // measured messages including duplicates
	Duplicates int64 // the same seq seen again
	OutOfOrder int64 // a server message id lower than one already seen
	maxID      int64
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{} }

// Add records a delivery of seq carrying server message id (0 if unknown) and
// reports whether it was the first one. Order is judged by the server's ids, not by
// seq: concurrent sends may reach the server in any order, but once it has numbered
// them every subscriber must see them in that order.
func (t *Tally) Add(seq, id int64) bool {
	t.Received++
	w := int(seq / 64)
	for w >= len(t.got) {
		t.got = append(t.got, 0)
	}
	bit := uint64(1) << (seq % 64)
	if t.got[w]&bit != 0 {
		t.Duplicates++
		return false
	}
	t.got[w] |= bit
	t.unique.Add(1)
	if id > 0 {
		if id < t.maxID {
			t.OutOfOrder++
		} else {
			t.maxID = id
		}
	}
	return true
}

// Unique is the number of distinct measured messages received.
func (t *Tally) Unique() int64 { return t.unique.Load() }

// Has reports whether seq was received.
func (t *Tally) Has(seq int64) bool {
	w := int(seq / 64)
	return seq >= 0 && w < len(t.got) && t.got[w]&(uint64(1)<<(seq%64)) != 0
}

// Compare counts acknowledged messages this subscriber never got (lost) and messages
// it got whose send was not acknowledged (unexpected: e.g. a send that timed out
// after the server stored it), over sequence numbers 0..upTo-1.
func (t *Tally) Compare(sent *SentSet, upTo int64) (lost, unexpected int64) {
	words := int((upTo + 63) / 64)
	for w := 0; w < words; w++ {
		var s, g uint64
		if w < len(sent.words) {
			s = sent.words[w].Load()
		}
		if w < len(t.got) {
			g = t.got[w]
		}
		if rest := upTo - int64(w)*64; rest < 64 {
			mask := uint64(1)<<rest - 1
			s, g = s&mask, g&mask
		}
		lost += int64(bits.OnesCount64(s &^ g))
		unexpected += int64(bits.OnesCount64(g &^ s))
	}
	return lost, unexpected
}

// CompareChannel is Compare for a subscriber of channel rem of mod channels: it
// expects only the sequence numbers n with n mod mod == rem (message n went to
// channel n mod mod). With one channel it is Compare.
func (t *Tally) CompareChannel(sent *SentSet, upTo, mod, rem int64) (lost, unexpected int64) {
	if mod <= 1 {
		return t.Compare(sent, upTo)
	}
	for n := rem; n < upTo; n += mod {
		s, g := sent.Has(n), t.Has(n)
		switch {
		case s && !g:
			lost++
		case g && !s:
			unexpected++
		}
	}
	return lost, unexpected
}
