package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ora-runtime/ora/shared/operate"
	"github.com/ora-runtime/ora/shared/ora"
)

type fakeOperator struct{ resumed []string }

func (f *fakeOperator) Incidents(context.Context) ([]operate.Incident, operate.Summary, error) {
	return []operate.Incident{{ID: "incident-1"}}, operate.Summary{Incidents: 1, ResumptionRate: 0.5}, nil
}

func (f *fakeOperator) Incident(_ context.Context, id string) (operate.Incident, error) {
	if id != "incident-1" {
		return operate.Incident{}, ora.Errorf(ora.ENOTFOUND, "no incident %q", id)
	}
	return operate.Incident{ID: id}, nil
}

func (f *fakeOperator) Resume(_ context.Context, wave string, req operate.ResumeRequest) (operate.Resumed, error) {
	motor, by := req.MotorVersion, req.By
	if req.Patch != nil {
		motor += "+" + req.Patch.Kind
	}
	switch wave {
	case "running":
		return operate.Resumed{}, ora.Conflict(nil, "wave running is not paused")
	case "missing":
		return operate.Resumed{}, ora.Errorf(ora.ENOTFOUND, "no wave")
	}
	f.resumed = append(f.resumed, wave+"/"+motor+"/"+by)
	return operate.Resumed{WaveID: wave, MotorVersion: motor}, nil
}

func (f *fakeOperator) Resolve(_ context.Context, wave string, executed bool, by, reason string) (operate.Resolution, error) {
	if wave == "running" {
		return operate.Resolution{}, ora.Conflict(nil, "wave running is not paused on an action whose outcome is unknown")
	}
	f.resumed = append(f.resumed, fmt.Sprintf("%s/executed=%v/%s/%s", wave, executed, reason, by))
	return operate.Resolution{Resumed: operate.Resumed{WaveID: wave, ResumeAt: map[bool]string{true: "Validate", false: "Act"}[executed]}, Executed: executed}, nil
}

func (f *fakeOperator) Reclassify(_ context.Context, id, taxonomy, by, reason string) (operate.Incident, error) {
	if id != "incident-1" {
		return operate.Incident{}, ora.Errorf(ora.ENOTFOUND, "no incident %q", id)
	}
	if taxonomy != operate.MotorRules {
		return operate.Incident{}, ora.Invalid("taxonomy", "%q is not a class", taxonomy)
	}
	f.resumed = append(f.resumed, fmt.Sprintf("%s/%s/%s/%s", id, taxonomy, reason, by))
	return operate.Incident{ID: id, Override: &operate.Override{Taxonomy: taxonomy, By: by, Reason: reason}}, nil
}

func (f *fakeOperator) Redrive(_ context.Context, wave, by string) (operate.Redriven, error) {
	switch wave {
	case "running":
		return operate.Redriven{}, ora.Conflict(nil, "wave running cannot be redriven: execution is RUNNING")
	case "succeeded":
		return operate.Redriven{}, ora.Conflict(nil, "wave succeeded already has its final verdict (completed): a redrive cannot change it")
	case "missing":
		return operate.Redriven{}, ora.Errorf(ora.ENOTFOUND, "no wave")
	}
	f.resumed = append(f.resumed, wave+"/redrive/"+by)
	return operate.Redriven{WaveID: wave, Redrive: 1, By: by}, nil
}

func TestOperatorRoutes(t *testing.T) {
	tests := []struct {
		name, method, path, token, body string
		readAuth                        bool
		want                            int
		wantBody                        string
	}{
		{"incidents on loopback", "GET", "/incidents", "", "", false, 200, `"resumption_rate":0.5`},
		{"incidents need ora.read off loopback", "GET", "/incidents", "", "", true, 401, ``},
		{"incidents with ora.read", "GET", "/incidents", "reader", "", true, 200, `"incident-1"`},
		{"incidents with another scope", "GET", "/incidents", "operator", "", true, 403, `ora.read`},
		{"one incident", "GET", "/incidents/incident-1", "", "", false, 200, `"id":"incident-1"`},
		{"unknown incident", "GET", "/incidents/incident-2", "", "", false, 404, `no incident`},
		{"resume", "POST", "/waves/w1/resume", "operator", `{"motor_version":"1.2.0"}`, false, 200, `"motor_version":"1.2.0"`},
		{"resume without a body", "POST", "/waves/w1/resume", "operator", ``, false, 200, `"wave_id":"w1"`},
		{"resume needs ora.operate even on loopback", "POST", "/waves/w1/resume", "reader", `{}`, false, 403, `ora.operate`},
		{"resume without a token", "POST", "/waves/w1/resume", "", `{}`, false, 401, ``},
		{"resume a running wave", "POST", "/waves/running/resume", "operator", `{}`, false, 409, `not paused`},
		{"resume an unknown wave", "POST", "/waves/missing/resume", "operator", `{}`, false, 404, `no wave`},
		{"resume with a patch", "POST", "/waves/w1/resume", "operator", `{"patch":{"kind":"mapping","target":"github","value":{"title":"$.issue.title"}}}`, false, 200, `"wave_id":"w1"`},
		{"resume with an unknown field", "POST", "/waves/w1/resume", "operator", `{"motor":"x"}`, false, 400, `body`},
		{"resolve executed", "POST", "/waves/w1/resolve", "operator", `{"executed":true,"reason":"the target has it"}`, false, 200, `"resume_at":"Validate"`},
		{"resolve not executed", "POST", "/waves/w1/resolve", "operator", `{"executed":false}`, false, 200, `"resume_at":"Act"`},
		{"resolve needs the answer", "POST", "/waves/w1/resolve", "operator", `{}`, false, 400, `executed`},
		{"resolve needs ora.operate", "POST", "/waves/w1/resolve", "reader", `{"executed":true}`, false, 403, `ora.operate`},
		{"resolve a running wave", "POST", "/waves/running/resolve", "operator", `{"executed":true}`, false, 409, `not paused`},
		{"reclassify", "POST", "/incidents/incident-1/classification", "operator", `{"taxonomy":"MOTOR-RULES","reason":"the rule is missing"}`, false, 200, `"taxonomy":"MOTOR-RULES"`},
		{"reclassify needs ora.operate", "POST", "/incidents/incident-1/classification", "reader", `{"taxonomy":"MOTOR-RULES","reason":"x"}`, false, 403, `ora.operate`},
		{"reclassify to no class", "POST", "/incidents/incident-1/classification", "operator", `{"taxonomy":"OOPS","reason":"x"}`, false, 400, `taxonomy`},
		{"reclassify an unknown incident", "POST", "/incidents/incident-9/classification", "operator", `{"taxonomy":"MOTOR-RULES","reason":"x"}`, false, 404, `no incident`},
		{"reclassify with an unknown field", "POST", "/incidents/incident-1/classification", "operator", `{"class":"motor"}`, false, 400, `body`},
		{"redrive", "POST", "/waves/w1/redrive", "operator", ``, false, 200, `"redrive":1`},
		{"redrive with an empty body", "POST", "/waves/w1/redrive", "operator", `{}`, false, 200, `"by":"olga"`},
		{"redrive needs ora.operate even on loopback", "POST", "/waves/w1/redrive", "reader", ``, false, 403, `ora.operate`},
		{"redrive without a token", "POST", "/waves/w1/redrive", "", ``, false, 401, ``},
		{"redrive a running wave", "POST", "/waves/running/redrive", "operator", ``, false, 409, `RUNNING`},
		{"redrive a succeeded wave", "POST", "/waves/succeeded/redrive", "operator", ``, false, 409, `final verdict (completed)`},
		{"redrive an unknown wave", "POST", "/waves/missing/redrive", "operator", ``, false, 404, `no wave`},
		{"redrive with a body", "POST", "/waves/w1/redrive", "operator", `{"stage":"Act"}`, false, 400, `body`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := &fakeOperator{}
			s := &Server{Operator: op, ReadAuth: tt.readAuth, Authorize: StaticTokens([]Token{
				{Token: "reader", Subject: "bob", Scopes: []string{ScopeOperatorRead}},
				{Token: "operator", Subject: "olga", Scopes: []string{ScopeOperate}},
			})}
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("%s %s: got %d %s, want %d containing %q", tt.method, tt.path, rec.Code, rec.Body, tt.want, tt.wantBody)
			}
			if tt.want == 200 && tt.method == "POST" && (len(op.resumed) != 1 || !strings.HasSuffix(op.resumed[0], "/olga")) {
				t.Errorf("Resume calls: %v, want one by olga", op.resumed)
			}
		})
	}
}
