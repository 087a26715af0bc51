package rules_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ora-runtime/ora/shared/observe"
	"github.com/ora-runtime/ora/shared/observe/observetest"
	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/rules"
)

// eventRules match AWS events by kind, source and detail-type, as
// docs/sources.md shows: an alarm opens a commitment and its OK closes it; a
// failed pipeline, a GuardDuty finding and a stopped instance notify; a new
// invoice object (S3 through EventBridge) is summarized.
const eventRules = `
version: events-1
rules:
  - name: alarm-opens
    when:
      all:
        - {field: source.type, equals: event}
        - {field: source.event_type, equals: CloudWatch Alarm State Change}
        - {field: payload.detail.state.value, equals: ALARM}
    then:
      action: commitment.open
      parameters: {id: "alarm-{{ payload.detail.alarmName }}", title: "alarm {{ payload.detail.alarmName }}"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: An alarm in ALARM is a promise to look.
  - name: alarm-closes
    when:
      all:
        - {field: source.type, equals: event}
        - {field: source.event_type, equals: CloudWatch Alarm State Change}
        - {field: payload.detail.state.value, equals: OK}
    then:
      action: commitment.close
      parameters: {id: "alarm-{{ payload.detail.alarmName }}"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: The alarm is back to OK.
  - name: pipeline-failed
    when:
      all:
        - {field: source.provider, equals: aws.codepipeline}
        - {field: payload.detail.state, equals: FAILED}
    then:
      action: notify
      parameters: {message: "pipeline {{ payload.detail.pipeline }} failed ({{ payload.detail['execution-id'] }})"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: A failed release is worth a message.
  - name: guardduty
    when:
      all:
        - {field: source.event_type, equals: GuardDuty Finding}
    then:
      action: notify
      parameters: {message: "{{ payload.detail.type }}: {{ payload.detail.title }}"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: A finding is worth a message.
  - name: instance-stopped
    when:
      all:
        - {field: source.event_type, equals: EC2 Instance State-change Notification}
        - {field: payload.detail.state, in: [stopped, terminated]}
    then:
      action: notify
      parameters: {message: "{{ payload.detail['instance-id'] }} is {{ payload.detail.state }}"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: An instance went down.
  - name: new-invoice
    when:
      all:
        - {field: source.type, equals: object}
        - {field: source.event, equals: create}
        - {field: source.path, matches: "\\.pdf$"}
    then:
      action: notify
      parameters: {message: "new invoice {{ source.bucket }}/{{ source.path }}"}
      confidence: 0.9
      tier: 1
      author_type: auditor
      reasoning: A new invoice is summarized.
default:
  action: notify
  parameters: {message: "unmatched {{ id }}"}
  confidence: 0.1
  tier: 3
  author_type: architect
  reasoning: Nothing matched.
`

// Each AWS event sample of events/event goes through the observer (as the
// observe-event Lambda receives it) and a rule.
func TestEventSamplesThroughNormalizationAndARule(t *testing.T) {
	set, err := rules.Parse([]byte(eventRules))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, rule, param, want string
	}{
		{"cloudwatch-alarm-state-change.json", "alarm-opens", "id", "alarm-checkout-api-5xx"},
		{"cloudwatch-alarm-ok.json", "alarm-closes", "id", "alarm-checkout-api-5xx"},
		{"codepipeline-execution-failed.json", "pipeline-failed", "message", "pipeline checkout-release failed (01234567-0123-0123-0123-012345678901)"},
		{"guardduty-finding.json", "guardduty", "message", "UnauthorizedAccess:EC2/SSHBruteForce: 203.0.113.77 is performing SSH brute force attacks against i-0f1e2d3c4b5a69788."},
		{"ec2-instance-state-change.json", "instance-stopped", "message", "i-0a9b8c7d6e5f40312 is stopped"},
		{"s3-object-created.json", "new-invoice", "message", "new invoice acme-invoices/incoming/2026/INV-20417.pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "events", "event", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			ledger := &observetest.Ledger{}
			obs, err := observe.New(ledger, &observetest.Waves{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := obs.Event(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := ledger.Entries(context.Background(), rec.SignalID)
			if err != nil || len(entries) != 1 {
				t.Fatalf("entries %v, %v", entries, err)
			}
			var sig ora.NormalizedSignal
			if err := json.Unmarshal(entries[0].Body, &sig); err != nil {
				t.Fatal(err)
			}
			m, err := set.Evaluate(sig)
			if err != nil {
				t.Fatal(err)
			}
			if m.Rule != tt.rule {
				t.Fatalf("source %+v: rule %q, want %q", sig.Source, m.Rule, tt.rule)
			}
			var got map[string]any
			if err := json.Unmarshal(m.Parameters, &got); err != nil {
				t.Fatal(err)
			}
			if got[tt.param] != tt.want {
				t.Errorf("parameters.%s = %v, want %q", tt.param, got[tt.param], tt.want)
			}
		})
	}
}
