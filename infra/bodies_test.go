package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/ora"
)

// Every function reaches the ledger, so every one may read entry bodies
// stored by reference under BodyPrefix of the stack's bucket, and every one
// that writes the ledger may put them there; each knows the bucket
// (ORA_BODY_BUCKET). No function gets the bucket beyond what it had.
func TestLedgerBodiesBucketGrants(t *testing.T) {
	synth(t)
	var bucket string
	for id := range resources(t, "AWS::S3::Bucket") {
		if strings.HasPrefix(id, "Objects") {
			bucket = id
		}
	}
	if bucket == "" {
		t.Fatal("no Objects bucket")
	}
	seen := 0
	for id, f := range resources(t, "AWS::Lambda::Function") {
		p := f["Properties"].(map[string]any)
		if p["Runtime"] != "provided.al2023" {
			continue
		}
		name := strings.TrimPrefix(fmt.Sprint(p["Description"]), "ora ")
		vars, _ := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if getAttID(vars["ORA_BODY_BUCKET"]) != bucket {
			t.Errorf("%s (%s): ORA_BODY_BUCKET = %v, want the Objects bucket", name, id, vars["ORA_BODY_BUCKET"])
		}
		stmts := roleStatements(t, getAttID(p["Role"]))
		if !grantsOn(stmts, "s3:GetObject", bucket, "/"+BodyPrefix+"*") {
			t.Errorf("%s: may not s3:GetObject on %s/%s*", name, bucket, BodyPrefix)
		}
		wantPut := name != "outbox-sweep"
		if got := grantsOn(stmts, "s3:PutObject", bucket, "/"+BodyPrefix+"*"); got != wantPut {
			t.Errorf("%s: s3:PutObject on %s/%s* is %v, want %v", name, bucket, BodyPrefix, got, wantPut)
		}
		seen++
	}
	if seen < len(FunctionNames(root)) {
		t.Errorf("checked %d functions, want at least %d", seen, len(FunctionNames(root)))
	}
}

// Both body prefixes lie under the granted BodyPrefix, and the bucket
// expires the expiring one after ora.ExpiringBodyDays (its noncurrent
// versions a day later), nothing else of the bucket.
func TestExpiringBodiesLifecycle(t *testing.T) {
	for _, p := range []string{ora.BodyPrefix, ora.ExpiringBodyPrefix} {
		if !strings.HasPrefix(p, BodyPrefix) {
			t.Errorf("%s is not under the granted %s", p, BodyPrefix)
		}
	}
	synth(t)
	var rules []any
	for id, b := range resources(t, "AWS::S3::Bucket") {
		if strings.HasPrefix(id, "Objects") {
			lc, _ := b["Properties"].(map[string]any)["LifecycleConfiguration"].(map[string]any)
			rules, _ = lc["Rules"].([]any)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("the Objects bucket has %d lifecycle rules, want 1: %v", len(rules), rules)
	}
	r := rules[0].(map[string]any)
	want := map[string]any{"Prefix": ora.ExpiringBodyPrefix, "ExpirationInDays": float64(ora.ExpiringBodyDays), "Status": "Enabled"}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("rule %s = %v, want %v", k, r[k], v)
		}
	}
	if nv, _ := r["NoncurrentVersionExpiration"].(map[string]any); nv["NoncurrentDays"] != float64(1) {
		t.Errorf("noncurrent versions expire after %v, want 1 day", r["NoncurrentVersionExpiration"])
	}
}

// grantsOn reports whether an Allow statement grants action on a resource
// built from the bucket's logical id and suffix ({"Fn::Join": ["", [{"Fn::GetAtt":
// [bucket, "Arn"]}, suffix]]}).
func grantsOn(stmts []map[string]any, action, bucket, suffix string) bool {
	for _, st := range stmts {
		if st["Effect"] != "Allow" {
			continue
		}
		matched := false
		for _, a := range toStrings(st["Action"]) {
			if a == action || (strings.HasSuffix(a, "*") && strings.HasPrefix(action, strings.TrimSuffix(a, "*"))) {
				matched = true
			}
		}
		if !matched {
			continue
		}
		res := st["Resource"]
		list, ok := res.([]any)
		if !ok {
			list = []any{res}
		}
		for _, r := range list {
			join, ok := r.(map[string]any)["Fn::Join"].([]any)
			if !ok || len(join) != 2 {
				continue
			}
			parts, _ := join[1].([]any)
			if len(parts) == 2 && getAttID(parts[0]) == bucket && parts[1] == suffix {
				return true
			}
		}
	}
	return false
}
