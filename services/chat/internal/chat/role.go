package chat

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Role is a user's standing in the community. Roles are totally ordered:
// a higher role may do everything a lower one may.
type Role string

// Roles, lowest first.
const (
	RoleViewer      Role = "viewer"
	RoleSubscriber  Role = "subscriber"
	RoleVIP         Role = "vip"
	RoleModerator   Role = "moderator"
	RoleBroadcaster Role = "broadcaster"
)

// Roles lists every role from the highest to the lowest, the order used in
// documentation and in the permission matrix tests.
var Roles = []Role{RoleBroadcaster, RoleModerator, RoleVIP, RoleSubscriber, RoleViewer}

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleSubscriber:
		return 2
	case RoleVIP:
		return 3
	case RoleModerator:
		return 4
	case RoleBroadcaster:
		return 5
	}
	return 0
}

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r is min or higher. An unknown role is never at
// least anything, so a corrupted record cannot gain rights.
func (r Role) AtLeast(min Role) bool { return r.Valid() && r.rank() >= min.rank() }

// Above reports whether r is strictly higher than other.
func (r Role) Above(other Role) bool { return r.Valid() && r.rank() > other.rank() }

// ParseRole accepts a role name in any letter case.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", fmt.Errorf("unknown role %q (want one of broadcaster, moderator, vip, subscriber, viewer)", s)
	}
	return r, nil
}

// UnmarshalJSON rejects unknown roles at the edge instead of letting them
// reach the rules.
func (r *Role) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("role: %w", err)
	}
	if s == "" {
		*r = ""
		return nil
	}
	p, err := ParseRole(s)
	if err != nil {
		return err
	}
	*r = p
	return nil
}
