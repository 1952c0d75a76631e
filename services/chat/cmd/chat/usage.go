package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/apistack/platform/libs/apiserver/jwtauth"
)

// usage is `chat --help`: every subcommand and the environment it reads.
const usage = `usage: chat [serve | healthcheck | token | help]

Subcommands:
  serve         Run the chat service (the default): the HTTP API under /api/v1,
                live delivery over WebSocket (/api/v1/ws), the chat page (/),
                /docs, /healthz, /readyz and /metrics.
  healthcheck   Ask the local /healthz (PORT, HOST) and exit 0 on 200, else 1
                (Docker images have no shell or curl).
  token --sub ID [--name NAME] [--ttl 1h]
                Print a development platform token: an HS256 JWT for the user
                ID, signed with CHAT_JWT_SECRET, with CHAT_JWT_ISSUER and
                CHAT_JWT_AUDIENCE as iss and aud when set. --ttl is 1m..24h.
                On a terminal it ends without a newline, so that a terminal's
                carriage return never joins the token (docker-compose exec
                without -T); piped, it ends with one.
  help          Print this help (also -h, --help).

Environment (configuration comes only from the environment):
  PORT (3000), HOST (127.0.0.1), APP_ENV / NODE_ENV (development | production),
  LOG_LEVEL (info), REDIS_URL (empty: the memory engine), SHUTDOWN_TIMEOUT (10s)
  RATE_LIMIT_MAX, RATE_LIMIT_WINDOW, RATE_LIMIT_ALLOW, RATE_LIMIT_IPV6_PREFIX,
  RATE_LIMIT_FAIL_CLOSED, METRICS_ENABLED, CORS_ORIGIN, TRUSTED_PROXIES
  OTEL_EXPORTER_OTLP_ENDPOINT
                          send OpenTelemetry traces to this OTLP collector, like
                          http://jaeger:4318 (default: off); OTEL_EXPORTER_OTLP_PROTOCOL
                          (http/protobuf or grpc), OTEL_TRACES_SAMPLER and _ARG,
                          OTEL_SERVICE_NAME (chat) and the SDK's other OTEL_* variables
  CHAT_ADMIN_TOKEN        the platform administrator's (broadcaster's) bearer token;
                          required in production, generated in development
  CHAT_JWT_SECRET         accept platform HS256 JWTs signed with it (>= 32 bytes)
  CHAT_JWKS_URL           accept platform RS256/ES256/EdDSA JWTs checked against it
  CHAT_JWT_ISSUER         required iss of platform JWTs, when set
  CHAT_JWT_AUDIENCE       required aud of platform JWTs, when set
  CHAT_EMBED_ORIGINS      origins allowed to hand the chat page a token by
                          postMessage (comma list; default: the page's own origin)
  CHAT_HISTORY (1000), CHAT_PUBLIC_READ (true), CHAT_SEND_LIMIT (20/30s)
  CHAT_OPEN_CHANNELS (true: a viewer's first message opens a channel, in a
                          pool of its own; idle ones are reclaimed after 1h)
  CHAT_MAX_FILTERS, CHAT_MAX_REGEX_FILTERS, CHAT_MAX_COMMANDS, CHAT_MAX_CHANNELS,
  CHAT_MAX_CHANNEL_ROLES
  CHAT_WS_MAX_SOCKETS, CHAT_WS_USER_RESERVE_PERCENT, CHAT_WS_MAX_SOCKETS_PER_USER,
  CHAT_WS_MAX_SOCKETS_PER_IP, CHAT_WS_MAX_SOCKETS_PER_NET, CHAT_WS_IPV4_NET_PREFIX,
  CHAT_WS_IPV6_NET_PREFIX, CHAT_WS_MAX_CHANNELS_PER_IP, CHAT_WS_WRITERS
  CHAT_PPROF_ADDR         profiling listener (builds tagged pprof only)

The README lists every variable with its default and range.
`

// maxTokenTTL bounds a development token's life.
const maxTokenTTL = 24 * time.Hour

// token prints a development token signed with CHAT_JWT_SECRET, as a
// platform would issue it, so a newcomer can sign in without one.
func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sub := fs.String("sub", "", "the platform user id (sub claim; required)")
	name := fs.String("name", "", "the display name (name claim)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid (1m..24h)")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, tokenUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("token: %w (chat token --help)", err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("token: unexpected arguments %q", fs.Args())
	case strings.TrimSpace(*sub) == "":
		return errors.New("token: --sub is required")
	case *ttl < time.Minute || *ttl > maxTokenTTL:
		return fmt.Errorf("token: --ttl %s: want 1m..24h", *ttl)
	}
	secret := getenv("CHAT_JWT_SECRET")
	if len(secret) < jwtauth.MinSecretBytes {
		return fmt.Errorf("token: set CHAT_JWT_SECRET (at least %d bytes) to the secret the service uses", jwtauth.MinSecretBytes)
	}
	now := time.Now()
	claims := jwt.MapClaims{"sub": *sub, "iat": now.Unix(), "exp": now.Add(*ttl).Unix()}
	if *name != "" {
		claims["name"] = *name
	}
	if iss := strings.TrimSpace(getenv("CHAT_JWT_ISSUER")); iss != "" {
		claims["iss"] = iss
	}
	if aud := strings.TrimSpace(getenv("CHAT_JWT_AUDIENCE")); aud != "" {
		claims["aud"] = aud
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	// A terminal turns the newline into CR LF (a TTY's output processing), and
	// $(docker-compose exec chat /chat token ...) would keep the CR in the token: on a
	// terminal the token is printed alone.
	if !isTerminal(stdout) {
		s += "\n"
	}
	_, err = io.WriteString(stdout, s)
	return err
}

const tokenUsage = `usage: chat token --sub ID [--name NAME] [--ttl 1h]

Print a development platform token (an HS256 JWT) for the user ID, signed with
CHAT_JWT_SECRET (with CHAT_JWT_ISSUER and CHAT_JWT_AUDIENCE as iss and aud when set).
Under compose: docker-compose exec -T chat /chat token --sub alice --name Alice

`

// isTerminal reports whether w is a character device (a terminal), the way a shell's
// test -t does without an ioctl.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
