package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestArchiveIsOffUnlessADatabaseIsNamed(t *testing.T) {
	c, err := Load(envOf(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Archive.Enabled() || c.Archive.Hold != DefaultArchiveHold {
		t.Fatalf("unset: %+v", c.Archive)
	}
	c, err = Load(envOf(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/0",
		"CHAT_DATABASE_URL": "postgres://chat:s3cret@db:5432/chat", "CHAT_ARCHIVE_HOLD": "5000"}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Archive.Enabled() || c.Archive.Hold != 5000 {
		t.Fatalf("set: %+v", c.Archive)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("start", "config", c)
	if strings.Contains(logs.String(), "s3cret") || !strings.Contains(logs.String(), "db:5432/chat") {
		t.Fatalf("the log shows the password or not the database: %s", logs.String())
	}
}

func TestArchiveRefusals(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CHAT_DATABASE_URL": "postgres://db/chat"}, "needs the Redis engine"},
		{map[string]string{"REDIS_URL": "redis://r:6379/0", "CHAT_DATABASE_URL": "mysql://u:pw-not-shown@db/chat"}, "want a postgres://"},
		{map[string]string{"CHAT_ARCHIVE_HOLD": "999"}, "CHAT_ARCHIVE_HOLD"},
		{map[string]string{"CHAT_HISTORY": "2000", "CHAT_ARCHIVE_HOLD": "1500"}, "CHAT_ARCHIVE_HOLD"},
		{map[string]string{"CHAT_ARCHIVE_HOLD": "x"}, "CHAT_ARCHIVE_HOLD"},
	} {
		_, err := Load(envOf(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.env, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "pw-not-shown") {
			t.Errorf("the error shows the URL's password: %v", err)
		}
	}
}

func TestArchiveRetention(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil || c.Archive.Retention != DefaultArchiveRetention {
		t.Fatalf("default retention %v %v", c.Archive.Retention, err)
	}
	c, err = Load(envOf(map[string]string{"CHAT_ARCHIVE_RETENTION": "400d"}))
	if err != nil || c.Archive.Retention != 400*24*time.Hour {
		t.Fatalf("400d: %v %v", c.Archive.Retention, err)
	}
	for _, v := range []string{"0d", "12h", "36h", "3651d", "forever"} {
		if _, err := Load(envOf(map[string]string{"CHAT_ARCHIVE_RETENTION": v})); err == nil || !strings.Contains(err.Error(), "CHAT_ARCHIVE_RETENTION") {
			t.Errorf("%s: %v", v, err)
		}
	}
}
