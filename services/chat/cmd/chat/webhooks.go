package main

import (
	"errors"
	"time"

	"github.com/apistack/platform/services/chat/internal/webhooks"
	"github.com/apistack/platform/services/chat/internal/webhooks/memq"
	"github.com/apistack/platform/services/chat/internal/webhooks/redisq"
)

// startWebhooks opens the webhooks' store beside the engine's (Redis:
// durable and shared by the replicas; memory: this process's) and starts
// the dispatcher.
func (a *App) startWebhooks() error {
	src, ok := a.Store.(webhooks.Source)
	if !ok {
		return errors.New("webhooks: the engine cannot list its channels")
	}
	var store webhooks.Store
	if a.Redis != nil {
		store = redisq.New(a.Redis, "")
	} else {
		store = memq.New(time.Now)
	}
	a.Webhooks = webhooks.NewManager(store, a.Service, a.Config.WebhookAllowPrivate)
	d := webhooks.New(webhooks.Options{Store: store, Source: src, Log: a.Log,
		Client: webhooks.NewClient(webhooks.Timeout, a.Config.WebhookAllowPrivate, webhooks.Concurrency)})
	a.stopWebhooks = runUntilStopped(d.Run)
	return nil
}
