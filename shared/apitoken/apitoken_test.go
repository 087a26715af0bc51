package apitoken

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/ora"
)

var (
	key = []byte("0123456789abcdef0123456789abcdef")
	now = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
)

func TestSignVerifyRoundTrip(t *testing.T) {
	tok, err := Sign(key, Claims{Subject: "e2e", Scope: "ora.approve orientation.read", Namespace: "team-a"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Verify(key, tok, now.Add(59*time.Minute))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if c.Subject != "e2e" || c.Namespace != "team-a" || strings.Join(c.Scopes(), ",") != "ora.approve,orientation.read" {
		t.Errorf("claims %+v", c)
	}
}

// TestVerifyRefuses walks every way a token is refused.
func TestVerifyRefuses(t *testing.T) {
	good, _ := Sign(key, Claims{Subject: "x", Scope: "ora.read"}, now, time.Hour)
	parts := strings.Split(good, ".")
	otherKey, _ := Sign([]byte("another-key-of-thirty-two-bytes!!"), Claims{Subject: "x"}, now, time.Hour)
	none := "eyJhbGciOiJub25lIn0." + parts[1] + "."
	forgedPayload := parts[0] + "." + b64([]byte(`{"sub":"admin","scope":"ora.operate","exp":9999999999}`)) + "." + parts[2]
	noSub := func() string {
		msg := header + "." + b64([]byte(`{"exp":`+itoa(now.Add(time.Hour).Unix())+`}`))
		return msg + "." + sign(key, msg)
	}()
	tooLong := func() string {
		msg := header + "." + b64([]byte(`{"sub":"x","exp":`+itoa(now.Add(MaxLifetime+time.Hour).Unix())+`}`))
		return msg + "." + sign(key, msg)
	}()
	hs512 := func() string {
		msg := b64([]byte(`{"alg":"HS512"}`)) + "." + parts[1]
		return msg + "." + sign(key, msg)
	}()
	cases := []struct {
		name, token string
		key         []byte
		at          time.Time
		want        string
	}{
		{"not a JWT", "abc", key, now, "not a JWT"},
		{"signed with another key", otherKey, key, now, "bad signature"},
		{"alg none", none, key, now, "bad signature"},
		{"payload swapped", forgedPayload, key, now, "bad signature"},
		{"expired", good, key, now.Add(time.Hour), "expired"},
		{"no subject", noSub, key, now, "no subject"},
		{"lives too long", tooLong, key, now, "lives longer"},
		{"other algorithm", hs512, key, now, "not HS256"},
		{"no key configured", good, nil, now, "not configured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.key, tc.token, tc.at)
			if ora.ErrorCode(err) != ora.EUNAUTHORIZED || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify: %v, want EUNAUTHORIZED saying %q", err, tc.want)
			}
		})
	}
}

func TestSignRefuses(t *testing.T) {
	for name, f := range map[string]func() (string, error){
		"short key":    func() (string, error) { return Sign(key[:8], Claims{Subject: "x"}, now, time.Hour) },
		"no subject":   func() (string, error) { return Sign(key, Claims{}, now, time.Hour) },
		"ttl too long": func() (string, error) { return Sign(key, Claims{Subject: "x"}, now, MaxLifetime+time.Second) },
		"ttl zero":     func() (string, error) { return Sign(key, Claims{Subject: "x"}, now, 0) },
	} {
		if _, err := f(); ora.ErrorCode(err) != ora.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
