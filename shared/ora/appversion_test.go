package ora_test

import (
	"regexp"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

func TestAppVersion(t *testing.T) {
	type app struct{ Sources []string }
	semverBuild := regexp.MustCompile(`^\d+\.\d+\.\d+\+[0-9a-f]{12}$`)
	a, err := ora.AppVersion("1.4.0", app{[]string{"github"}})
	if err != nil || !semverBuild.MatchString(a) || a[:6] != "1.4.0+" {
		t.Fatalf("declared: %q, %v", a, err)
	}
	same, _ := ora.AppVersion("1.4.0", app{[]string{"github"}})
	other, _ := ora.AppVersion("1.4.0", app{[]string{"github", "slack"}})
	undeclared, _ := ora.AppVersion("", app{[]string{"github"}})
	if same != a || other == a || undeclared != "0.0.0"+a[5:] {
		t.Errorf("equal contexts %q %q; a changed context %q; undeclared %q", a, same, other, undeclared)
	}
	for _, bad := range []string{"1.4", "v1.4.0", "1.04.0", "x.y.z"} {
		if _, err := ora.AppVersion(bad, app{}); ora.ErrorField(err) != "app_version" {
			t.Errorf("%q: %v, want EINVALID app_version", bad, err)
		}
	}
}
