package realtime_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/apistack/platform/services/chat/internal/realtime"
)

// hello's replica is the host name (in compose, the container's: what `docker ps` and
// the logs show), so a client's connection can be traced to its replica.
func TestHelloNamesTheReplicaByHostName(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Fatalf("this machine has no host name to compare with: %v", err)
	}
	r := startReplica(t, replicaConfig{publicRead: true}, testPrefix())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(r.base, "http://", "ws://", 1)+realtime.WSPath+"?channel=general", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var hello struct {
		Type    string `json:"type"`
		Replica string `json:"replica"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &hello); err != nil {
		t.Fatalf("first frame %q: %v", data, err)
	}
	if hello.Type != "hello" || hello.Replica != host {
		t.Fatalf("first frame %s: want a hello with replica %q", data, host)
	}
	// Presence stays keyed per process: two replicas on one host (this test's two hubs)
	// share the name but not the presence key.
	if r.hub.ReplicaID() == host {
		t.Errorf("presence key is the host name; processes on one host would overwrite each other's counts")
	}
}
