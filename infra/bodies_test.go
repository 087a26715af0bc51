package main

import (
	"fmt"
	"strings"
	"testing"
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
