package act_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/act/acttest"
	"github.com/ora-runtime/ora/shared/ora"
)

// TestForbiddenCanonical: every spelling of a forbidden path is forbidden.
func TestForbiddenCanonical(t *testing.T) {
	patterns := []string{"admin/users", "https://api.example.com/internal", "Secrets/**"}
	cases := []struct {
		name, target string
		want         bool
	}{
		{"plain", "https://api.example.com/admin/users", true},
		{"percent-encoded letter", "https://api.example.com/%61dmin/users", true},
		{"double encoding", "https://api.example.com/%2561dmin/users", true},
		{"encoded slash", "https://api.example.com/admin%2Fusers", true},
		{"upper case", "https://api.example.com/ADMIN/users", true},
		{"dot segment", "https://api.example.com/admin/./users", true},
		{"dot-dot segment", "https://api.example.com/public/../admin/users", true},
		{"encoded dot-dot", "https://api.example.com/public/%2e%2e/admin/users", true},
		{"matrix params", "https://api.example.com/admin;x=1/users", true},
		{"doubled slashes", "https://api.example.com//admin//users", true},
		{"backslash", "https://api.example.com/admin%5Cusers", true},
		{"under it", "https://api.example.com/admin/users/7", true},
		{"with a query", "https://api.example.com/admin/users?page=2", true},
		{"scheme and host pattern", "https://API.example.com/Internal/x", true},
		{"pattern case folded", "https://api.example.com/secrets/key", true},
		{"plain path upper case", "ADMIN/users", true},
		{"plain path dot segment", "admin/./users", true},
		{"plain path doubled slash", "admin//users", true},
		{"another path", "https://api.example.com/admin/groups", false},
		{"a name that only starts alike", "https://api.example.com/admin/users-report", false},
		{"another host's internal", "https://other.example.com/internal", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := act.Forbidden(tc.target, patterns); got != tc.want {
				t.Errorf("Forbidden(%q) = %v, want %v", tc.target, got, tc.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	cases := []struct {
		in    string
		isURL bool
		want  string
	}{
		{"/%61dmin/users", true, "admin/users"},
		{"/ADMIN/users", true, "admin/users"},
		{"/admin/./users", true, "admin/users"},
		{"/admin;x=1/users;y", true, "admin/users"},
		{"//a///b/../c/", true, "a/c"},
		{"a%2Fb", false, "a%2fb"},
		{"Dir/./File.TXT", false, "dir/file.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := act.Canonical(tc.in, tc.isURL); got != tc.want {
				t.Errorf("Canonical(%q, %v) = %q, want %q", tc.in, tc.isURL, got, tc.want)
			}
		})
	}
}

// TestObjectPutRefusesSymlinks: a link inside the root, to outside it or to
// another folder inside it, is never written through.
func TestObjectPutRefusesSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "actions"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "private"), 0o755))
	must(os.Symlink(outside, filepath.Join(root, "actions", "escape")))
	must(os.Symlink(filepath.Join(root, "private"), filepath.Join(root, "actions", "inside")))
	must(os.Symlink(filepath.Join(outside, "target.txt"), filepath.Join(root, "actions", "file.txt")))
	o := act.NewObjectPut(act.Folder{Root: root}, []string{"actions/"})
	cases := []struct{ name, key, code string }{
		{"folder link out of the root", "actions/escape/report.txt", ora.EFORBIDDEN},
		{"folder link to another folder in the root", "actions/inside/report.txt", ora.EFORBIDDEN},
		{"file link out of the root", "actions/file.txt", ora.EFORBIDDEN},
		{"a real folder", "actions/reports/report.txt", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := acttest.Params(t, map[string]string{"key": tc.key, "body": "x"})
			if _, err := o.Check(params); ora.ErrorCode(err) != tc.code {
				t.Errorf("Check: %v, want code %q", err, tc.code)
			}
			_, err := o.Run(context.Background(), params)
			if ora.ErrorCode(err) != tc.code {
				t.Errorf("Run: %v, want code %q", err, tc.code)
			}
			// The store refuses on its own too (a link made after the check).
			_, err = act.Folder{Root: root}.PutObject(context.Background(), tc.key, []byte("x"), "")
			if ora.ErrorCode(err) != tc.code {
				t.Errorf("PutObject: %v, want code %q", err, tc.code)
			}
		})
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("%d files were written outside the root", len(entries))
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "private")); len(entries) != 0 {
		t.Errorf("%d files were written under private/", len(entries))
	}
}
