module github.com/apistack/platform/deploy/scripts/faults

go 1.26.8

require github.com/coder/websocket v1.8.15
