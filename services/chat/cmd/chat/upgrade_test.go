package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apistack/platform/libs/apiserver/redistest"
)

// beforeChannelScopes is the last commit whose roles, bans, timeouts,
// commands and filters were all global (issue 27).
const beforeChannelScopes = "0681270"

// oldChatBinary builds cmd/chat as it was at commit, from this repository's
// history, into a temporary directory.
func oldChatBinary(t *testing.T, commit string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("upgrade test: builds an earlier version (skipped with -short)")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("upgrade test needs the git history: %v", err)
	}
	root := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("upgrade test: commit %s is not in this clone (shallow?)", commit)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar %s: %v", commit, err)
	}
	bin := filepath.Join(dir, "chat-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/chat")
	build.Dir = filepath.Join(dir, "services", "chat")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build chat at %s: %v\n%s", commit, err, out)
	}
	return bin
}

// TestUpgradeKeepsGlobalRulesPlatformWide writes a dataset with the chat
// of 0681270 (roles, a ban and a timeout announced in a channel, a
// command, a filter: all global then), starts this version on the same
// Redis and checks that each still holds in every channel, as before:
// nothing already accepted changes meaning.
func TestUpgradeKeepsGlobalRulesPlatformWide(t *testing.T) {
	oldBin := oldChatBinary(t, beforeChannelScopes)
	srv := redistest.Start(t)

	type created struct{ ID, Token string }
	old := startBinary(t, oldBin, srv.URL())
	call := func(r *replica, method, path, token string, body any, want int, out any) {
		t.Helper()
		code, err := r.call(method, path, token, body, out)
		if err != nil || code != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, code, err, want)
		}
	}
	users := map[string]created{}
	for _, u := range []struct{ name, role string }{{"mod", "moderator"}, {"vip", "vip"}, {"talker", "viewer"}, {"banned", "viewer"}, {"quiet", "viewer"}} {
		var c created
		call(old, "POST", "/api/v1/users", faultAdminToken, map[string]string{"name": u.name, "role": u.role}, http.StatusCreated, &c)
		users[u.name] = c
	}
	call(old, "POST", "/api/v1/commands", users["mod"].Token, map[string]any{"command": "!so", "response": "global ${count}", "cooldown_seconds": 0}, http.StatusCreated, nil)
	call(old, "POST", "/api/v1/filters", users["mod"].Token, map[string]string{"kind": "blocked_term", "pattern": "darn"}, http.StatusCreated, nil)
	// Then, a ban or timeout with a channel held everywhere: the channel
	// only said where it was announced.
	call(old, "POST", "/api/v1/users/"+users["banned"].ID+"/ban", users["mod"].Token, map[string]string{"channel": "alpha", "reason": "old"}, http.StatusOK, nil)
	call(old, "POST", "/api/v1/users/"+users["quiet"].ID+"/timeout", users["mod"].Token, map[string]any{"channel": "alpha", "seconds": 3600}, http.StatusOK, nil)
	call(old, "PATCH", "/api/v1/channels/beta", users["mod"].Token, map[string]int{"slow_mode_seconds": 60}, http.StatusOK, nil)
	var sent struct{ ID int64 }
	call(old, "POST", "/api/v1/messages/send", users["talker"].Token, map[string]string{"channel": "beta", "message": "before the upgrade"}, http.StatusCreated, &sent)
	old.Kill()

	r := startReplica(t, srv.URL())
	type errBody struct{ Reason string }
	send := func(user, channel, text string) (int, errBody, string) {
		t.Helper()
		var out struct {
			errBody
			Reply *struct{ Text string }
		}
		code, err := r.call("POST", "/api/v1/messages/send", users[user].Token, map[string]string{"channel": channel, "message": text}, &out)
		if err != nil {
			t.Fatalf("send as %s: %v", user, err)
		}
		reply := ""
		if out.Reply != nil {
			reply = out.Reply.Text
		}
		return code, out.errBody, reply
	}
	for _, ch := range []string{"alpha", "beta", "gamma"} {
		if code, e, _ := send("banned", ch, "hi"); code != http.StatusForbidden || e.Reason != "banned" {
			t.Errorf("banned before the upgrade, sends in %s: %d %+v", ch, code, e)
		}
		if code, e, _ := send("quiet", ch, "hi"); code != http.StatusForbidden || e.Reason != "timed_out" {
			t.Errorf("timed out before the upgrade, sends in %s: %d %+v", ch, code, e)
		}
		if code, e, _ := send("talker", ch, "darn"); code != http.StatusUnprocessableEntity || e.Reason != "blocked_term" {
			t.Errorf("the old filter in %s: %d %+v", ch, code, e)
		}
	}
	for i, ch := range []string{"alpha", "gamma"} {
		if code, _, reply := send("talker", ch, "!so"); code != http.StatusCreated || reply != fmt.Sprintf("global %d", i+1) {
			t.Errorf("the old command in %s: %d %q", ch, code, reply)
		}
	}
	// Roles: the old moderator moderates every channel, the old VIP skips
	// slow mode in beta (set before the upgrade), a viewer does not.
	call(r, "DELETE", fmt.Sprintf("/api/v1/messages/%d?channel=beta", sent.ID), users["mod"].Token, nil, http.StatusOK, nil)
	var roles struct{ Roles []any }
	call(r, "GET", "/api/v1/channels/gamma/roles", users["mod"].Token, nil, http.StatusOK, &roles)
	if len(roles.Roles) != 0 {
		t.Errorf("roles given in gamma after the upgrade: %v", roles.Roles)
	}
	for i := 0; i < 2; i++ {
		if code, e, _ := send("vip", "beta", fmt.Sprintf("vip %d", i)); code != http.StatusCreated {
			t.Errorf("old vip in beta's slow mode: %d %+v", code, e)
		}
	}
	send("talker", "beta", "one")
	if code, e, _ := send("talker", "beta", "two"); code != http.StatusTooManyRequests || e.Reason != "slow_mode" {
		t.Errorf("viewer in beta's slow mode: %d %+v", code, e)
	}
	// The old ban is lifted platform-wide, by a platform-wide moderator.
	call(r, "DELETE", "/api/v1/users/"+users["banned"].ID+"/ban", users["mod"].Token, nil, http.StatusOK, nil)
	if code, e, _ := send("banned", "alpha", "free"); code != http.StatusCreated {
		t.Errorf("after the unban: %d %+v", code, e)
	}
}
