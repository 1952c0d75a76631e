module github.com/apistack/platform/services/chat

go 1.26.8

require (
	github.com/redis/go-redis/v9 v9.23.0
	golang.org/x/text v0.43.0
)

require github.com/coder/websocket v1.8.15 // indirect

require (
	github.com/apistack/platform/libs/apiserver v0.0.0
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/apistack/platform/libs/apiserver => ../../libs/apiserver
