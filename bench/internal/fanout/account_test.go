package fanout

import (
	"sync"
	"testing"
)

func TestTallyCountsLossDuplicatesAndOrder(t *testing.T) {
	sent := NewSentSet(200)
	for seq := int64(0); seq < 100; seq++ {
		if seq != 7 { // send 7 failed
			sent.Mark(seq)
		}
	}
	sent.Mark(3) // marking twice counts once
	if sent.Len() != 99 {
		t.Fatalf("sent = %d", sent.Len())
	}
	tl := NewTally()
	for seq := int64(0); seq < 100; seq++ {
		switch seq {
		case 10, 11: // lost
		case 50:
			tl.Add(51, 1000+51)
			tl.Add(50, 1000+50) // reordered by the server
		case 51:
		default:
			tl.Add(seq, 1000+seq)
		}
	}
	if first := tl.Add(20, 1020); first {
		t.Error("duplicate reported as first delivery")
	}
	tl.Add(20, 1020)
	lost, unexpected := tl.Compare(sent, 100)
	if lost != 2 {
		t.Errorf("lost = %d, want 2", lost)
	}
	if unexpected != 1 { // 7 arrived though its send failed
		t.Errorf("unexpected = %d, want 1", unexpected)
	}
	if tl.Duplicates != 2 || tl.OutOfOrder != 1 || tl.Unique() != 98 || tl.Received != 100 {
		t.Errorf("dups %d ooo %d unique %d received %d", tl.Duplicates, tl.OutOfOrder, tl.Unique(), tl.Received)
	}
}

func TestTallyGrowsForLargeSequenceNumbers(t *testing.T) {
	tl := NewTally()
	tl.Add(100_000, 0)
	if !tl.Has(100_000) || tl.Has(99_999) || tl.Has(-1) {
		t.Error("bitset lookup wrong")
	}
}

func TestSentSetIgnoresOutOfRangeAndIsConcurrent(t *testing.T) {
	s := NewSentSet(1000)
	s.Mark(-1)
	s.Mark(1000 + 64)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for seq := int64(g); seq < 1000; seq += 4 {
				s.Mark(seq)
			}
		})
	}
	wg.Wait()
	if s.Len() != 1000 || !s.Has(999) || s.Has(1064) {
		t.Fatalf("len %d", s.Len())
	}
}

func TestCompareChannel(t *testing.T) {
	sent := NewSentSet(100)
	for n := int64(0); n < 10; n++ {
		sent.Mark(n)
	}
	tl := NewTally()
	for _, n := range []int64{1, 4, 7} { // channel 1 of 3 got 1, 4, 7; 10.. never sent
		tl.Add(n, n+1)
	}
	if lost, unexpected := tl.CompareChannel(sent, 10, 3, 1); lost != 0 || unexpected != 0 {
		t.Fatalf("channel 1: lost %d unexpected %d", lost, unexpected)
	}
	if lost, _ := tl.CompareChannel(sent, 10, 3, 2); lost != 3 { // 2, 5, 8
		t.Fatalf("channel 2: lost %d, want 3", lost)
	}
}
