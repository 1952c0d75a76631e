package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is every OTEL_* variable this package honours, read once by LoadConfig and
// handed to the SDK explicitly by Setup, so that the start-up line (LogValue) shows all
// that is in force and nothing is read again behind it. The zero Config is tracing off.
type Config struct {
	// Endpoint is the traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or
	// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces over HTTP); "" is tracing off, as are
	// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none.
	Endpoint string
	// Protocol is http/protobuf (default) or grpc (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL).
	Protocol string
	// Headers are sent with every export (OTEL_EXPORTER_OTLP_[TRACES_]HEADERS,
	// "k=v,k2=v2", values percent-decoded). They often carry an API key: LogValue
	// shows their names only.
	Headers map[string]string
	// Timeout bounds one export (OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT, milliseconds;
	// 10 s).
	Timeout time.Duration
	// Gzip compresses exports (OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION gzip or none).
	Gzip bool
	// Certificate is a PEM file of the CAs to trust (OTEL_EXPORTER_OTLP_[TRACES_]
	// CERTIFICATE); ClientCertificate and ClientKey a client's pair for mutual TLS
	// (..._CLIENT_CERTIFICATE, ..._CLIENT_KEY). Read by Setup.
	Certificate, ClientCertificate, ClientKey string
	// Sampler is OTEL_TRACES_SAMPLER (parentbased_always_on by default) and SamplerArg
	// the ratio of the traceidratio ones (OTEL_TRACES_SAMPLER_ARG; 1).
	Sampler    string
	SamplerArg float64
	// ServiceName is OTEL_SERVICE_NAME (Options.ServiceName when empty); Resource is
	// OTEL_RESOURCE_ATTRIBUTES, "k=v,..." percent-decoded, under which
	// OTEL_SERVICE_NAME wins for service.name, as the specification says.
	ServiceName string
	Resource    map[string]string
	// The batch span processor: ScheduleDelay (OTEL_BSP_SCHEDULE_DELAY, ms; 5 s),
	// ExportTimeout (OTEL_BSP_EXPORT_TIMEOUT, ms; 30 s), MaxQueue
	// (OTEL_BSP_MAX_QUEUE_SIZE; 2048), MaxBatch (OTEL_BSP_MAX_EXPORT_BATCH_SIZE; 512).
	ScheduleDelay, ExportTimeout time.Duration
	MaxQueue, MaxBatch           int
}

// The specification's defaults.
const (
	defaultTimeout       = 10 * time.Second
	defaultScheduleDelay = 5 * time.Second
	defaultExportTimeout = 30 * time.Second
	defaultMaxQueue      = 2048
	defaultMaxBatch      = 512
)

// Enabled reports whether the configuration exports traces.
func (c Config) Enabled() bool { return c.Endpoint != "" }

// LoadConfig reads the OTEL_* variables through getenv (os.Getenv outside tests). An
// invalid value is an error naming its variable, all of them at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs []error
	bad := func(name, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want))
	}
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	// signal is a variable that OTEL_EXPORTER_OTLP_TRACES_<suffix> overrides whole.
	signal := func(suffix string) (value, name string) {
		name = "OTEL_EXPORTER_OTLP_TRACES_" + suffix
		if v := get(name); v != "" {
			return v, name
		}
		name = "OTEL_EXPORTER_OTLP_" + suffix
		return get(name), name
	}
	off := false
	if v := get("OTEL_SDK_DISABLED"); v != "" {
		switch strings.ToLower(v) {
		case "true":
			off = true
		case "false":
		default:
			bad("OTEL_SDK_DISABLED", v, "must be true or false")
		}
	}
	switch v := get("OTEL_TRACES_EXPORTER"); strings.ToLower(v) {
	case "", "otlp":
	case "none":
		off = true
	default:
		bad("OTEL_TRACES_EXPORTER", v, "must be otlp or none (the only exporter built in)")
	}

	c := Config{Protocol: protoHTTP, Timeout: defaultTimeout, Sampler: "parentbased_always_on", SamplerArg: 1,
		ScheduleDelay: defaultScheduleDelay, ExportTimeout: defaultExportTimeout, MaxQueue: defaultMaxQueue, MaxBatch: defaultMaxBatch}
	if v, name := signal("PROTOCOL"); v != "" {
		switch v {
		case protoHTTP, protoGRPC:
			c.Protocol = v
		default:
			bad(name, v, "must be http/protobuf or grpc (http/json is not supported)")
		}
	}
	if v := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		// The signal's own URL is used as it is, path included.
		if err := checkEndpoint(v); err != nil {
			bad("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v, err.Error())
		}
		c.Endpoint = v
	} else if v := get("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		if err := checkEndpoint(v); err != nil {
			bad("OTEL_EXPORTER_OTLP_ENDPOINT", v, err.Error())
		}
		c.Endpoint = v
		if u, err := url.Parse(v); err == nil && c.Protocol == protoHTTP {
			// The base URL of every signal: traces go to its /v1/traces.
			u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
			u.RawPath = ""
			c.Endpoint = u.String()
		}
	}
	if v, name := signal("HEADERS"); v != "" {
		h, err := parsePairs(v)
		if err != nil {
			bad(name, v, err.Error())
		}
		c.Headers = h
	}
	if v, name := signal("TIMEOUT"); v != "" {
		c.Timeout = millis(name, v, bad, defaultTimeout)
	}
	if v, name := signal("COMPRESSION"); v != "" {
		switch strings.ToLower(v) {
		case "gzip":
			c.Gzip = true
		case "none":
		default:
			bad(name, v, "must be gzip or none")
		}
	}
	for _, f := range []struct {
		suffix string
		to     *string
	}{{"CERTIFICATE", &c.Certificate}, {"CLIENT_CERTIFICATE", &c.ClientCertificate}, {"CLIENT_KEY", &c.ClientKey}} {
		*f.to, _ = signal(f.suffix)
	}
	switch {
	case c.ClientCertificate != "" && c.ClientKey == "":
		bad("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", c.ClientCertificate, "needs OTEL_EXPORTER_OTLP_CLIENT_KEY too")
	case c.ClientKey != "" && c.ClientCertificate == "":
		bad("OTEL_EXPORTER_OTLP_CLIENT_KEY", c.ClientKey, "needs OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE too")
	}
	c.Sampler, c.SamplerArg = samplerSetting(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"), bad)
	c.ServiceName = get("OTEL_SERVICE_NAME")
	if v := get("OTEL_RESOURCE_ATTRIBUTES"); v != "" {
		r, err := parsePairs(v)
		if err != nil {
			bad("OTEL_RESOURCE_ATTRIBUTES", v, err.Error())
		}
		c.Resource = r
	}
	if v := get("OTEL_BSP_SCHEDULE_DELAY"); v != "" {
		c.ScheduleDelay = millis("OTEL_BSP_SCHEDULE_DELAY", v, bad, defaultScheduleDelay)
	}
	if v := get("OTEL_BSP_EXPORT_TIMEOUT"); v != "" {
		c.ExportTimeout = millis("OTEL_BSP_EXPORT_TIMEOUT", v, bad, defaultExportTimeout)
	}
	if v := get("OTEL_BSP_MAX_QUEUE_SIZE"); v != "" {
		c.MaxQueue = count("OTEL_BSP_MAX_QUEUE_SIZE", v, bad, defaultMaxQueue)
	}
	if v := get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); v != "" {
		c.MaxBatch = count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", v, bad, defaultMaxBatch)
	}
	if c.MaxBatch > c.MaxQueue {
		bad("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", strconv.Itoa(c.MaxBatch), fmt.Sprintf("must be at most OTEL_BSP_MAX_QUEUE_SIZE (%d)", c.MaxQueue))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if off || c.Endpoint == "" {
		return Config{}, nil // off is one value
	}
	return c, nil
}

// millis is a variable in whole milliseconds, at least 1.
func millis(name, v string, bad func(name, value, want string), def time.Duration) time.Duration {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > int64(24*time.Hour/time.Millisecond) {
		bad(name, v, "must be whole milliseconds from 1 to 86400000, like 5000")
		return def
	}
	return time.Duration(n) * time.Millisecond
}

// count is a positive size up to a million.
func count(name, v string, bad func(name, value, want string), def int) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1_000_000 {
		bad(name, v, "must be a whole number from 1 to 1000000")
		return def
	}
	return n
}

// parsePairs reads "k=v,k2=v2" (headers, resource attributes): keys trimmed, values
// percent-decoded, as the specification writes them.
func parsePairs(v string) (map[string]string, error) {
	out := map[string]string{}
	for part := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value: must be a list like k1=v1,k2=v2", part)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("the value of %s is not percent-encoded correctly", k)
		}
		out[k] = dec
	}
	return out, nil
}

// samplerSetting checks OTEL_TRACES_SAMPLER and its argument.
func samplerSetting(name, arg string, bad func(name, value, want string)) (string, float64) {
	name = strings.ToLower(name)
	switch name {
	case "":
		return "parentbased_always_on", 1
	case "parentbased_always_on", "parentbased_always_off", "always_on", "always_off":
		return name, 1
	case "parentbased_traceidratio", "traceidratio":
		if arg == "" {
			return name, 1
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f != f || f < 0 || f > 1 {
			bad("OTEL_TRACES_SAMPLER_ARG", arg, "must be a number from 0 to 1, like 0.1")
			return name, 1
		}
		return name, f
	}
	bad("OTEL_TRACES_SAMPLER", name, "must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")
	return "parentbased_always_on", 1
}

// sampler is the SDK's sampler for the setting, and its description.
func (c Config) sampler() (sdktrace.Sampler, string) {
	ratio := strconv.FormatFloat(c.SamplerArg, 'g', -1, 64)
	switch c.Sampler {
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), c.Sampler
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SamplerArg)), c.Sampler + " " + ratio
	case "always_on":
		return sdktrace.AlwaysSample(), c.Sampler
	case "always_off":
		return sdktrace.NeverSample(), c.Sampler
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(c.SamplerArg), c.Sampler + " " + ratio
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample()), "parentbased_always_on"
}

// tlsConfig reads the certificate files, or returns nil when none is named.
func (c Config) tlsConfig() (*tls.Config, error) {
	if c.Certificate == "" && c.ClientCertificate == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.Certificate != "" {
		pem, err := os.ReadFile(c.Certificate)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE=%q: no PEM certificate in the file", c.Certificate)
		}
	}
	if c.ClientCertificate != "" {
		pair, err := tls.LoadX509KeyPair(c.ClientCertificate, c.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// LogValue is the configuration for the start-up line: "off", or every setting in force
// under its variable's name in lower case, with the endpoint's user and query and the
// headers' values masked.
func (c Config) LogValue() slog.Value {
	if !c.Enabled() {
		return slog.StringValue("off")
	}
	_, sampler := c.sampler()
	compression := "none"
	if c.Gzip {
		compression = "gzip"
	}
	return slog.GroupValue(
		slog.String("endpoint", redactURL(c.Endpoint)), slog.String("protocol", c.Protocol),
		slog.String("headers", maskedPairs(c.Headers)), slog.String("timeout", c.Timeout.String()),
		slog.String("compression", compression), slog.String("certificate", c.Certificate),
		slog.String("client_certificate", c.ClientCertificate),
		slog.String("sampler", sampler), slog.String("service_name", c.ServiceName),
		slog.String("resource_attributes", pairs(c.Resource)),
		slog.String("bsp_schedule_delay", c.ScheduleDelay.String()), slog.String("bsp_export_timeout", c.ExportTimeout.String()),
		slog.Int("bsp_max_queue_size", c.MaxQueue), slog.Int("bsp_max_export_batch_size", c.MaxBatch),
	)
}

// pairs writes a map as sorted k=v pairs.
func pairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + m[k])
	}
	return b.String()
}

// maskedPairs writes a map's sorted keys, each value masked.
func maskedPairs(m map[string]string) string {
	masked := make(map[string]string, len(m))
	for k := range m {
		masked[k] = "***"
	}
	return pairs(masked)
}
