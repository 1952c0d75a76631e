module github.com/apistack/platform/deploy/scripts/e2e

go 1.26.8

require github.com/coder/websocket v1.8.15 // indirect

require github.com/apistack/platform/services/chat v0.0.0

// The chat's Go client is the workspace's; the chat module's own replace does
// not apply here, so the library it requires is named too.
replace (
	github.com/apistack/platform/libs/apiserver => ../../../libs/apiserver
	github.com/apistack/platform/services/chat => ../../../services/chat
)
