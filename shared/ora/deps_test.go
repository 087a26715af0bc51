package ora_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingFromAWS enforces that the domain stays free of AWS: no
// package shared/ora depends on, directly or not, is an AWS SDK, the Lambda
// runtime, smithy, the CDK or jsii.
func TestImportsNothingFromAWS(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/ora-runtime/ora/shared/ora").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list -deps listed %d packages (%q); want the package and its dependencies", len(deps), out)
	}
	forbidden := []string{"github.com/aws/", "github.com/awslabs/", "github.com/aws-cdk", "github.com/cdklabs/", "github.com/aws/jsii-runtime-go"}
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("shared/ora depends on %s", dep)
			}
		}
	}
	if !strings.Contains(string(out), "encoding/json") {
		t.Errorf("go list -deps output lacks encoding/json, which shared/ora imports: the check is not reading the real list")
	}
}
