package httpapi

import (
	"net/http"
	"strings"

	"github.com/apistack/platform/libs/apiserver"

	"github.com/apistack/platform/services/chat/internal/chat"
)

// CreateUserBody is a new user.
type CreateUserBody struct {
	Name string `json:"name" minLength:"2" maxLength:"25" pattern:"^[A-Za-z0-9_]+$" doc:"2..25 of A-Z, a-z, 0-9 and _; unique regardless of case" example:"alice"`
	Role string `json:"role,omitempty" enum:"broadcaster,moderator,vip,subscriber,viewer" default:"viewer" doc:"Must be below the creator's role"`
}

// CreateUserInput is POST /users.
type CreateUserInput struct {
	Body CreateUserBody
}

// UserIDInput names a user in the path.
type UserIDInput struct {
	ID string `path:"id" minLength:"1" maxLength:"64" doc:"User id"`
}

// SetRoleBody changes a role.
type SetRoleBody struct {
	Role string `json:"role" enum:"broadcaster,moderator,vip,subscriber,viewer" doc:"The new role, below the actor's (broadcaster is never granted or taken here)"`
}

// SetRoleInput is PATCH /users/{id}.
type SetRoleInput struct {
	ID   string `path:"id" minLength:"1" maxLength:"64"`
	Body SetRoleBody
}

// TimeoutBody times a user out.
type TimeoutBody struct {
	Seconds int    `json:"seconds" minimum:"1" maximum:"1209600" doc:"1 second to 14 days" example:"600"`
	Reason  string `json:"reason,omitempty" maxLength:"500" doc:"Sent to every reader of the channel: no control character but newline, no bidirectional control (400)"`
	Channel string `json:"channel,omitempty" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The one channel the timeout holds in, checked with the roles held there, and where user_timed_out is announced (with moderation.scope channel). Absent: platform-wide, needs a platform-wide role, announced in general"`
}

// TimeoutInput is POST /users/{id}/timeout.
type TimeoutInput struct {
	ID   string `path:"id" minLength:"1" maxLength:"64"`
	Body TimeoutBody
}

// BanBody bans a user.
type BanBody struct {
	Reason  string `json:"reason,omitempty" maxLength:"500" doc:"Sent to every reader of the channel: no control character but newline, no bidirectional control (400)"`
	Channel string `json:"channel,omitempty" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"The one channel the ban holds in, checked with the roles held there, and where user_banned is announced (with moderation.scope channel); the user's sockets on that channel close with 4005. Absent: platform-wide, needs a platform-wide role, announced in general"`
}

// BanInput is POST /users/{id}/ban; the body is optional.
type BanInput struct {
	ID   string `path:"id" minLength:"1" maxLength:"64"`
	Body *BanBody
}

// UnbanInput is DELETE /users/{id}/ban.
type UnbanInput struct {
	ID      string `path:"id" minLength:"1" maxLength:"64"`
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Lift the ban or timeout held in this channel; absent: the platform-wide one"`
}

// MeInput takes no parameters.
// MeInput names, optionally, the channel whose standing the answer adds.
type MeInput struct {
	Channel string `query:"channel" pattern:"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$" doc:"Add the caller's standing in this channel (its role there, a ban or timeout held there) as channel"`
}

func (a *API) registerUsers(srv *apiserver.Server[chat.User]) {
	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/users", Tags: []string{tagUsers}, Status: http.StatusCreated,
		Summary: "Create a user",
		Description: "Answers 201 with the user and its bearer token. The token is shown only here: the service keeps " +
			"only its hash, so a lost token means deleting the user and creating it again.",
	}, chat.ActionManageUsers, map[int]string{http.StatusConflict: "The name is taken (regardless of case)"}), a.createUser)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/users", Tags: []string{tagUsers},
		Summary: "List users", Description: "Every user, by name.",
	}, chat.ActionListUsers, nil), a.listUsers)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/users/me", Tags: []string{tagUsers},
		Summary: "The caller's user", Description: "Any valid token may read its own user; with `channel`, its role and standing there too.",
	}, "", nil), a.me)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodGet, URL: Prefix + "/users/{id}", Tags: []string{tagUsers},
		Summary: "Get a user", Description: "Oneself with any role; anyone else with `list_users`.",
	}, "", map[int]string{http.StatusNotFound: "No such user"}), a.getUser)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPatch, URL: Prefix + "/users/{id}", Tags: []string{tagUsers},
		Summary: "Change a user's role", Description: "The target's role and the new role must both be below the actor's.",
	}, chat.ActionChangeRoles, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user changed meanwhile; read it and retry"}), a.setRole)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/users/{id}", Tags: []string{tagUsers},
		Summary: "Delete a user", Description: "Revokes its token; its messages stay.",
	}, chat.ActionManageUsers, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user changed meanwhile; read it and retry"}), a.deleteUser)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/users/{id}/timeout", Tags: []string{tagModeration},
		Summary: "Time a user out",
		Description: "The user cannot send for `seconds` (1 s to 14 days) in any channel; their sends answer 403 with " +
			"`until`. A new timeout replaces the previous one. A banned user must be unbanned first (409). With `channel` " +
			"it holds in that channel only, and the answer carries the user's standing there in `channel`.",
	}, chat.ActionTimeoutUsers, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user is banned, or changed meanwhile, or `channel` is new and `CHAT_MAX_CHANNELS` channels exist (`reason: limit`, `limit`)"}), a.timeout)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodPost, URL: Prefix + "/users/{id}/ban", Tags: []string{tagModeration},
		Summary: "Ban a user", Description: "The user cannot send in any channel until unbanned; their sends answer 403 `reason: banned`. " +
			"With `channel` it holds in that channel only (their open sockets there close with 4005), and the answer carries the user's standing there in `channel`.",
	}, chat.ActionBanUsers, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user is already banned, or changed meanwhile, or `channel` is new and `CHAT_MAX_CHANNELS` channels exist (`reason: limit`, `limit`)"}), a.ban)

	apiserver.Register(srv, writeOp(apiserver.Operation{
		Method: http.MethodDelete, URL: Prefix + "/users/{id}/ban", Tags: []string{tagModeration},
		Summary: "Unban a user", Description: "Lifts a ban and any timeout, platform-wide or with `channel` in that channel; unbanning a user in good standing succeeds and changes nothing.",
	}, chat.ActionBanUsers, map[int]string{http.StatusNotFound: "No such user", http.StatusConflict: "The user changed meanwhile; read it and retry"}), a.unban)
}

func (a *API) createUser(c *apiserver.Context[chat.User], in *CreateUserInput) (CreatedUser, error) {
	actor, err := Actor(c)
	if err != nil {
		return CreatedUser{}, err
	}
	u, token, err := a.svc.CreateUser(c.Request.Context(), actor, chat.CreateUserInput{Name: in.Body.Name, Role: chat.Role(in.Body.Role)})
	if err != nil {
		return CreatedUser{}, StatusError(err, inBody)
	}
	return CreatedUser{User: userOf(u), Token: token}, nil
}

func (a *API) listUsers(c *apiserver.Context[chat.User], _ *MeInput) (UserList, error) {
	actor, err := Actor(c)
	if err != nil {
		return UserList{}, err
	}
	us, err := a.svc.Users(c.Request.Context(), actor)
	if err != nil {
		return UserList{}, StatusError(err, inQuery)
	}
	out := UserList{Users: make([]User, 0, len(us))}
	for _, u := range us {
		out.Users = append(out.Users, userOf(u))
	}
	return out, nil
}

func (a *API) me(c *apiserver.Context[chat.User], in *MeInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	// Read it again rather than echo the token's user: the answer is what
	// the store holds now.
	u, err := a.svc.User(c.Request.Context(), actor, actor.ID)
	if err != nil {
		return User{}, StatusError(err, inParams)
	}
	if in.Channel == "" {
		return userOf(u), nil
	}
	m, err := a.svc.Member(c.Request.Context(), u, strings.ToLower(in.Channel))
	if err != nil {
		return User{}, StatusError(err, inParams)
	}
	return memberOf(m), nil
}

func (a *API) getUser(c *apiserver.Context[chat.User], in *UserIDInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	u, err := a.svc.User(c.Request.Context(), actor, in.ID)
	if err != nil {
		return User{}, StatusError(err, inParams)
	}
	return userOf(u), nil
}

func (a *API) setRole(c *apiserver.Context[chat.User], in *SetRoleInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	u, err := a.svc.SetRole(c.Request.Context(), actor, in.ID, chat.Role(in.Body.Role))
	if err != nil {
		return User{}, StatusError(err, inBody)
	}
	return userOf(u), nil
}

func (a *API) deleteUser(c *apiserver.Context[chat.User], in *UserIDInput) (apiserver.NoBody, error) {
	actor, err := Actor(c)
	if err != nil {
		return apiserver.NoBody{}, err
	}
	if err := a.svc.DeleteUser(c.Request.Context(), actor, in.ID); err != nil {
		return apiserver.NoBody{}, StatusError(err, inParams)
	}
	return apiserver.NoBody{}, nil
}

func (a *API) timeout(c *apiserver.Context[chat.User], in *TimeoutInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	m, err := a.svc.Timeout(c.Request.Context(), actor, in.ID, chat.TimeoutInput{Seconds: in.Body.Seconds, Reason: in.Body.Reason, Channel: in.Body.Channel})
	if err != nil {
		return User{}, StatusError(err, inBody)
	}
	return memberOf(m), nil
}

func (a *API) ban(c *apiserver.Context[chat.User], in *BanInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	var b chat.BanInput
	if in.Body != nil {
		b = chat.BanInput{Reason: in.Body.Reason, Channel: in.Body.Channel}
	}
	m, err := a.svc.Ban(c.Request.Context(), actor, in.ID, b)
	if err != nil {
		return User{}, StatusError(err, inBody)
	}
	return memberOf(m), nil
}

func (a *API) unban(c *apiserver.Context[chat.User], in *UnbanInput) (User, error) {
	actor, err := Actor(c)
	if err != nil {
		return User{}, err
	}
	m, err := a.svc.Unban(c.Request.Context(), actor, in.ID, in.Channel)
	if err != nil {
		return User{}, StatusError(err, inParams)
	}
	return memberOf(m), nil
}
