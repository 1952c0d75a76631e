package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Acquire implements chat.Store.
func (s *Store) Acquire(ctx context.Context, now time.Time, gates ...chat.Gate) (time.Duration, error) {
	if len(gates) == 0 {
		return 0, nil
	}
	keys, durations, err := s.gateArgs(gates)
	if err != nil {
		return 0, err
	}
	ms, err := acquire.Run(ctx, s.rdb, keys, append([]any{now.UnixMilli()}, durations...)...).Int64()
	if err != nil {
		return 0, failWrite("acquire gate", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// gateArgs are the keys and durations (ms) of gates for passGates.
func (s *Store) gateArgs(gates []chat.Gate) ([]string, []any, error) {
	keys := make([]string, len(gates))
	durations := make([]any, len(gates))
	for i, g := range gates {
		if g.Channel != gates[0].Channel {
			// One script, one slot: a channel's gates pass together.
			return nil, nil, fmt.Errorf("acquire gates: all gates must be in one channel (%s and %s)", gates[0].Channel, g.Channel)
		}
		keys[i] = s.ck(g.Channel, "gate:"+g.Key)
		durations[i] = g.For.Milliseconds()
	}
	return keys, durations, nil
}
