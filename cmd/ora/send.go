package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/embedded"
	"github.com/ora-runtime/ora/shared/observe"
)

var _ = register("send", "sign a file as a configured webhook source and POST it to the API", runSend)

const sendUsage = `usage: ora send SOURCE FILE [--config FILE] [--url URL] [--delivery ID]

Signs FILE (- reads stdin) as the webhook source SOURCE of the config file, the
way the provider would, and POSTs it to URL/webhooks/SOURCE. Prints the
receipt: {"signal_id", "wave_id", "duplicate"}. SOURCE may also be the name of
the config's events source (events:): FILE, an EventBridge event or PutEvents
entries, goes to URL/events, which answers per entry.

flags:
  --config FILE   the ora dev config file (default: the built-in defaults)
  --url URL       the API's base URL (default: http://<listen of the config>)
  --delivery ID   the delivery id, sent as Idempotency-Key and, for a github
                  source, as X-GitHub-Delivery (default: a new UUID; github
                  deliveries default to an id derived from the body)

exit status: 0 accepted (2xx), 1 refused or unreachable (the error on stderr),
2 bad usage.
`

// sendStdin is what FILE "-" reads; tests replace it.
var sendStdin io.Reader = os.Stdin

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, false)
	delivery := fs.String("delivery", "", "the delivery id (Idempotency-Key)")
	pos, code := parseInterleaved(fs, args, sendUsage, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "ora send: want SOURCE and FILE, got %d argument(s)\n\n%s", len(pos), sendUsage)
		return 2
	}
	name, file := pos[0], pos[1]
	cfg, base, err := cf.load()
	if err != nil {
		fmt.Fprintf(stderr, "ora send: %v\n", err)
		return 1
	}
	src, ok := cfg.Source(name)
	path := "/webhooks/" + url.PathEscape(name)
	if !ok && cfg.Events.Name == name && name != "" {
		src, path, ok = cfg.Events, "/events", true
	}
	if !ok {
		fmt.Fprintf(stderr, "ora send: no source %q in the config (sources: %s)\n", name, sourceNames(cfg))
		return 1
	}
	body, err := readSendInput(file)
	if err != nil {
		fmt.Fprintf(stderr, "ora send: %v\n", err)
		return 1
	}
	id := *delivery
	if id == "" {
		id = uuid.NewString()
	}
	// hmac signs the delivery id with the timestamp and the body; github's
	// delivery comes from the body unless --delivery names one.
	signedID := id
	if src.Type == observe.TypeGitHub {
		signedID = *delivery
	}
	header, err := observe.SignDelivery(src, body, time.Now(), signedID)
	if err != nil {
		fmt.Fprintf(stderr, "ora send: sign as %s: %v\n", name, err)
		return 1
	}
	header.Set("Idempotency-Key", id)
	status, resp, err := apiCall(ctx, http.MethodPost, base+path, header, body)
	if err != nil {
		fmt.Fprintf(stderr, "ora send: %v\n", err)
		return 1
	}
	if status < 200 || status > 299 {
		fmt.Fprintf(stderr, "ora send: %d %s: %s\n", status, http.StatusText(status), strings.TrimSpace(string(resp)))
		return 1
	}
	writeJSONIndented(stdout, resp)
	return 0
}

func sourceNames(cfg embedded.Config) string {
	names := make([]string, len(cfg.Sources))
	for i, s := range cfg.Sources {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func readSendInput(file string) ([]byte, error) {
	if file == "-" {
		b, err := io.ReadAll(sendStdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file (give a file to send, or - to read stdin)", file)
		}
		return nil, fmt.Errorf("read %s: %w", file, errors.Unwrap(err))
	}
	return b, nil
}

// The helpers below are shared by send, trace, approve and reject.

// clientFlags are the flags of the commands that talk to the API.
type clientFlags struct {
	config, url, token string
}

func (c *clientFlags) register(fs *flag.FlagSet, withToken bool) {
	fs.StringVar(&c.config, "config", "", "the ora dev config file")
	fs.StringVar(&c.url, "url", "", "the API's base URL")
	if withToken {
		fs.StringVar(&c.token, "token", "", "the bearer token")
	}
}

// hintFlags returns the flags to repeat in a printed hint: the --config and
// --url in use (a --token is never printed).
func (c clientFlags) hintFlags() []string {
	var out []string
	if c.config != "" {
		out = append(out, "--config", c.config)
	}
	if c.url != "" {
		out = append(out, "--url", c.url)
	}
	return out
}

// load reads the config (the defaults without --config) and resolves the
// API's base URL, without a trailing slash.
func (c clientFlags) load() (embedded.Config, string, error) {
	cfg, err := embedded.LoadConfig(c.config)
	if err != nil {
		return embedded.Config{}, "", err
	}
	if c.url != "" {
		u, err := url.Parse(c.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return embedded.Config{}, "", fmt.Errorf("--url %q is not an http(s) URL", c.url)
		}
		return cfg, strings.TrimRight(c.url, "/"), nil
	}
	return cfg, listenURL(cfg.Listen), nil
}

// listenURL turns a listen address into the URL a client dials: an empty or
// unspecified host (":8080", "0.0.0.0:8080") becomes the loopback address.
func listenURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// bearer returns the --token, else the first config token holding scope.
func (c clientFlags) bearer(cfg embedded.Config, scope string) string {
	if c.token != "" {
		return c.token
	}
	for _, t := range cfg.Tokens {
		if slices.Contains(t.Scopes, scope) {
			return t.Token
		}
	}
	return ""
}

// jsonHeader is the header of a JSON API call: Accept (and Content-Type)
// application/json, and the bearer for scope when there is one.
func (c clientFlags) jsonHeader(cfg embedded.Config, scope string) http.Header {
	h := http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}
	if tok := c.bearer(cfg, scope); tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

// parseInterleaved parses flags given before, between or after the positional
// arguments ("ora send demo file.json --url ..."). code is -1 to go on, else
// the exit code: 0 for -h, 2 for bad flags.
func parseInterleaved(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) (pos []string, code int) {
	setUsage(fs, usage, stderr)
	if flagSetCreated != nil {
		flagSetCreated(fs, usage)
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0
			}
			return nil, 2
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, -1
		}
		// A "--" ends the flags: everything after it is positional.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), -1
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

var apiHTTPClient = &http.Client{Timeout: 30 * time.Second}

// apiCall sends one request and returns the status and the body.
func apiCall(ctx context.Context, method, target string, header http.Header, body []byte) (int, []byte, error) {
	return clientCall(ctx, apiHTTPClient, method, target, header, body)
}

// clientCall is apiCall through client.
func clientCall(ctx context.Context, client *http.Client, method, target string, header http.Header, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "ora-cli")
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return 0, nil, fmt.Errorf("nothing answers at %s: is ora dev running? Start it with make run, or pass --url", req.URL.Host)
		}
		return 0, nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read the response: %w", method, target, err)
	}
	return resp.StatusCode, b, nil
}

// apiErrorMessage returns the "error" of an API error body, else the body itself.
func apiErrorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(body))
}

// writeJSONIndented writes a JSON body indented, or as it is when it is not JSON.
func writeJSONIndented(w io.Writer, body []byte) {
	var buf bytes.Buffer
	if json.Indent(&buf, bytes.TrimSpace(body), "", "  ") != nil {
		buf.Reset()
		buf.Write(bytes.TrimSpace(body))
	}
	buf.WriteByte('\n')
	_, _ = w.Write(buf.Bytes())
}
