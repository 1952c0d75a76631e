package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// Moderation in the Redis engine: the raid watch's keys and arguments,
// filter consequences (Punish) and shield switches (the review queue is
// held.go).
// Everything of a channel is in its slot; strikes are with the users,
// since a strike changes the user in the same script.

// appendKeys are appendMessage's keys for a message of ch watched by w:
// the log's, then the chatters' set only with a chatter to add, and the
// raid watch's (raid, shield, shieldoff, modlog) only when it counts one
// (raidArgs): a send that counts no raid names none of them.
func (s *Store) appendKeys(ch string, w chat.Watch) []string {
	keys := []string{s.ck(ch, "seq"), s.ck(ch, "log"), s.ck(ch, "trim"), s.ck(ch, "deleted")}
	if w.Chatter == "" {
		return keys
	}
	keys = append(keys, s.ck(ch, "seen"))
	if w.Raid == nil {
		return keys
	}
	return append(keys, s.ck(ch, "raid"), s.ck(ch, "shield"), s.ck(ch, "shieldoff"), s.modKey(ch))
}

// raidArgs are raidWatch's arguments for w: threshold, window ms, quiet
// ms, the shield event json and its moderation log entry json (a
// threshold of 0 counts nothing).
func raidArgs(w chat.Watch) ([]any, error) {
	r := w.Raid
	if r == nil || w.Chatter == "" {
		return []any{0, 0, 0, "", ""}, nil
	}
	data, err := json.Marshal(r.Event)
	if err != nil {
		return nil, fmt.Errorf("encode shield event: %w", err)
	}
	margs, err := modArgs(&r.Log)
	if err != nil {
		return nil, err
	}
	return []any{r.Threshold, chat.AutoShieldWindow.Milliseconds(), r.Quiet.Milliseconds(), data, margs[0]}, nil
}

// Punish implements chat.Store in one script in the users' slot (punish).
func (s *Store) Punish(ctx context.Context, p chat.Punish) (chat.Punishment, error) {
	if len(p.Ladder) == 0 {
		return chat.Punishment{}, errors.New("punish: no step")
	}
	if p.InChannel {
		return s.punishInChannel(ctx, p)
	}
	keys := []string{s.userKey(p.User), s.uk("strikes:" + p.Channel + ":" + p.User)}
	ch := p.Channel
	if s.cluster {
		keys = append(keys, s.uk("pending"))
	} else {
		keys = append(keys, s.ck(ch, "log"), s.ck(ch, "seq"), s.ck(ch, "trim"), s.ck(ch, "deleted"), s.modKey(ch))
	}
	args := []any{string(p.IfRole), flag(p.Strike), p.Now.UnixMilli(), chat.StrikeExpiry.Milliseconds(),
		s.ck(ch, "live"), s.revokedKey(), s.logCap(), len(p.Ladder)}
	pends := make([]pendingEvent, len(p.Ladder))
	for i, st := range p.Ladder {
		until, etype, edata := "", "", ""
		if st.Until != nil {
			until = st.Until.UTC().Format(timeLayout)
		}
		var data []byte
		if st.Event != nil {
			var err error
			if data, err = json.Marshal(st.Event); err != nil {
				return chat.Punishment{}, fmt.Errorf("encode event: %w", err)
			}
			etype, edata = string(st.Event.Type), string(data)
		}
		if s.cluster && (st.Event != nil || st.Log != nil) {
			var typ chat.EventType
			if st.Event != nil {
				typ = st.Event.Type
			}
			var err error
			if pends[i], err = newPendingEvent(ch, typ, data, st.Log); err != nil {
				return chat.Punishment{}, err
			}
			edata = pends[i].encoded
		}
		margs, err := modArgs(st.Log)
		if err != nil {
			return chat.Punishment{}, err
		}
		args = append(args, string(st.Penalty.Kind), until, st.Reason, etype, edata, pends[i].key, margs[0], margs[1])
	}
	res, err := punish.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return chat.Punishment{}, scriptStatus("punish", err, "user")
	}
	if len(res) < 2 {
		return chat.Punishment{}, fail("punish", fmt.Errorf("unexpected reply %v", res))
	}
	n, _ := res[0].(int64)
	step, _ := res[1].(int64)
	if step < 1 || int(step) > len(p.Ladder) {
		return chat.Punishment{}, fail("punish", fmt.Errorf("unexpected step %v", res[1]))
	}
	if pend := pends[step-1]; pend.key != "" {
		// As in UpdateUser: the change is stored and its event pending;
		// the repair (RepairPending) appends it if this fails.
		_ = s.applyPending(ctx, pend)
	}
	m := make(map[string]string, len(res)/2)
	for i := 2; i+1 < len(res); i += 2 {
		k, _ := res[i].(string)
		v, _ := res[i+1].(string)
		m[k] = v
	}
	u, err := parseUser(m)
	if err != nil {
		return chat.Punishment{}, err
	}
	return chat.Punishment{Strike: int(n), Step: int(step) - 1, User: u}, nil
}

// SwitchShield implements chat.Store (switchShield).
func (s *Store) SwitchShield(ctx context.Context, channel string, sw chat.ShieldSwitch) error {
	data, err := json.Marshal(sw.Event)
	if err != nil {
		return fmt.Errorf("encode shield event: %w", err)
	}
	margs, err := modArgs(&sw.Log)
	if err != nil {
		return err
	}
	keys := []string{s.ck(channel, "settings"), s.ck(channel, "shield"), s.ck(channel, "shieldoff"), s.ck(channel, "raid"),
		s.ck(channel, "log"), s.ck(channel, "seq"), s.ck(channel, "trim"), s.ck(channel, "deleted"), s.ck(channel, "blocked"),
		s.modKey(channel)}
	err = switchShield.Run(ctx, s.rdb, keys, flag(sw.On), sw.HoldOff.UnixMilli(), sw.Event.Shield.At.UnixMilli(), data,
		s.ck(channel, "live"), s.logCap(), margs[0]).Err()
	if err != nil {
		return failWrite("switch shield", err)
	}
	return nil
}

// CountBlocked implements chat.Store (countBlocked).
func (s *Store) CountBlocked(ctx context.Context, channel string, r chat.Raid) error {
	data, err := json.Marshal(r.Event)
	if err != nil {
		return fmt.Errorf("encode shield event: %w", err)
	}
	// Each sender is one member of the count (its last refused message's
	// time): one account's refusals cannot trip the shield alone.
	margs, err := modArgs(&r.Log)
	if err != nil {
		return err
	}
	keys := []string{s.ck(channel, "blocked"), s.ck(channel, "shield"), s.ck(channel, "shieldoff"),
		s.ck(channel, "log"), s.ck(channel, "seq"), s.ck(channel, "trim"), s.ck(channel, "deleted"), s.modKey(channel)}
	err = countBlocked.Run(ctx, s.rdb, keys, r.Sender, r.Now.UnixMilli(), r.Threshold,
		chat.AutoShieldWindow.Milliseconds(), r.Quiet.Milliseconds(), data, s.ck(channel, "live"), s.logCap(), margs[0]).Err()
	if err != nil {
		return failWrite("count blocked message", err)
	}
	return nil
}

// EndShield implements chat.Store (endShield).
func (s *Store) EndShield(ctx context.Context, channel string, e chat.ShieldEnd) (time.Time, error) {
	data, err := json.Marshal(e.Event)
	if err != nil {
		return time.Time{}, fmt.Errorf("encode shield event: %w", err)
	}
	margs, err := modArgs(&e.Log)
	if err != nil {
		return time.Time{}, err
	}
	keys := []string{s.ck(channel, "shield"), s.ck(channel, "settings"),
		s.ck(channel, "log"), s.ck(channel, "seq"), s.ck(channel, "trim"), s.ck(channel, "deleted"), s.modKey(channel)}
	ms, err := endShield.Run(ctx, s.rdb, keys, e.Now.UnixMilli(), data, s.ck(channel, "live"), s.logCap(), margs[0]).Int64()
	if err != nil {
		return time.Time{}, failWrite("end shield", err)
	}
	if ms == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms).UTC(), nil
}
