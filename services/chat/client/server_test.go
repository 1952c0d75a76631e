package client_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/apistack/platform/libs/apiserver"
	"github.com/apistack/platform/libs/apiserver/jwtauth"
	"github.com/apistack/platform/libs/apiserver/redisconn"
	"github.com/apistack/platform/libs/apiserver/redistest"
	"github.com/apistack/platform/libs/apiserver/testkit"
	"github.com/apistack/platform/services/chat/internal/chat"
	"github.com/apistack/platform/services/chat/internal/httpapi"
	"github.com/apistack/platform/services/chat/internal/jwtidentity"
	"github.com/apistack/platform/services/chat/internal/memory"
	"github.com/apistack/platform/services/chat/internal/realtime"
	"github.com/apistack/platform/services/chat/internal/realtime/redispresence"
	"github.com/apistack/platform/services/chat/internal/redisstore"
)

// The tests run the real chat (its service, REST API and live delivery,
// wired as cmd/chat wires them) over loopback, on the memory engine or a
// real redis-server of their own.

const adminToken = "admin-token-0123456789"

// wait bounds every wait: generous, as the machine is shared.
const wait = 30 * time.Second

func TestMain(m *testing.M) {
	testkit.QuietRedis()
	os.Exit(m.Run())
}

type engine interface {
	chat.Store
	chat.FeedSource
}

type serverConfig struct {
	redisURL   string // empty: memory engine
	store      engine // shared memory engine (nil: a new one)
	prefix     string
	identities *jwtauth.Verifier
	opts       realtime.Options
}

type server struct {
	srv  *apiserver.Server[chat.User]
	svc  *chat.Service
	base string
}

var prefixN atomic.Int64

func testPrefix() string { return fmt.Sprintf("cl%d:", prefixN.Add(1)) }

func startServer(t *testing.T, cfg serverConfig) *server {
	t.Helper()
	var rdb redis.UniversalClient
	store := cfg.store
	if cfg.redisURL != "" {
		var err error
		if rdb, err = redisconn.Open(cfg.redisURL); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		rs := redisstore.New(rdb, redisstore.Options{History: 1000, Prefix: cfg.prefix})
		// As cmd/chat does: the engine's repair runs beside the hub.
		ctx, stop := context.WithCancel(context.Background())
		repaired := make(chan struct{})
		go func() { defer close(repaired); rs.RepairPending(ctx) }()
		t.Cleanup(func() { stop(); <-repaired })
		store = rs
	} else if store == nil {
		store = memory.New(1000)
	}
	svc := chat.NewService(store, chat.Options{PublicRead: true, Logger: testkit.Logger(), Identities: jwtidentity.New(cfg.identities)})
	if _, err := svc.Bootstrap(context.Background(), adminToken); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	env := map[string]string{"PORT": "0"}
	srv, err := apiserver.New(apiserver.Config[chat.User]{
		Getenv:         func(k string) string { return env[k] },
		Logger:         testkit.Logger(),
		Redis:          rdb,
		RateLimitAllow: []string{"127.0.0.0/8"},
		TokenValidator: httpapi.NewAuthenticator(svc).Validate,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.Register(srv, svc); err != nil {
		t.Fatal(err)
	}
	opts := cfg.opts
	opts.KeyPrefix = cfg.prefix
	if rdb != nil {
		opts.Presence = redispresence.New(rdb, cfg.prefix, 0)
	}
	if _, err := realtime.Mount(srv, svc, realtime.Sources{Feed: store, Users: store}, opts); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{srv: srv, svc: svc, base: "http://" + srv.Addr()}
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = s.srv.Stop(ctx)
}

// relay is a loopback TCP relay in front of a server: cut drops every
// connection through it, as a network or a balancer would.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close(); r.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, u)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
	return r
}

func (r *relay) base() string { return "http://" + r.ln.Addr().String() }

func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.conns = nil
}

func redisServer(t *testing.T) *redistest.Server { return redistest.Start(t) }
