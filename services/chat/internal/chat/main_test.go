package chat_test

import (
	"os"
	"testing"

	"github.com/apistack/platform/libs/apiserver/testkit"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the tests that stop Redis expect them.
	testkit.QuietRedis()
	os.Exit(m.Run())
}
