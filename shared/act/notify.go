package act

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/google/uuid"

	"github.com/ora-runtime/ora/shared/ora"
)

// NotifyParams are the parameters of the notify action.
type NotifyParams struct {
	Subject string `json:"subject,omitempty"`
	Message string `json:"message"`
}

func decodeNotify(params json.RawMessage) (NotifyParams, error) {
	var p NotifyParams
	if err := decodeParams(TypeNotify, params, &p); err != nil {
		return p, err
	}
	if p.Message == "" {
		return p, ora.Invalid(TypeNotify+".parameters.message", "required")
	}
	return p, nil
}

// Publisher is the part of the SNS API the notify action calls; *sns.Client
// satisfies it.
type Publisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// SNSNotify publishes notifications to an SNS topic.
type SNSNotify struct {
	client   Publisher
	topicARN string
	now      func() time.Time
}

// NewSNSNotify returns a notify action publishing to topicARN.
func NewSNSNotify(client Publisher, topicARN string) *SNSNotify {
	return &SNSNotify{client: client, topicARN: topicARN, now: time.Now}
}

// Run publishes the message. Errors: EINVALID, ETRANSIENT (SNS throttled),
// or the SDK's error.
func (n *SNSNotify) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	p, err := decodeNotify(params)
	if err != nil {
		return Receipt{}, err
	}
	id, err := n.publish(ctx, p.Subject, p.Message)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Type: TypeNotify, Target: n.topicARN, ID: id, Digest: ora.Digest([]byte(p.Message)), At: n.now().UTC()}, nil
}

// Notify publishes a message outside any decision (escalations use it).
func (n *SNSNotify) Notify(ctx context.Context, subject, message string) error {
	_, err := n.publish(ctx, subject, message)
	return err
}

func (n *SNSNotify) publish(ctx context.Context, subject, message string) (string, error) {
	in := &sns.PublishInput{TopicArn: aws.String(n.topicARN), Message: aws.String(message)}
	if subject != "" {
		in.Subject = aws.String(subject)
	}
	out, err := n.client.Publish(ctx, in)
	if err != nil {
		return "", fmt.Errorf("notify: publish to %s: %w", n.topicARN, err)
	}
	return aws.ToString(out.MessageId), nil
}

// LogNotify writes notifications to a structured log: the embedded runtime's
// notify. The execution-evidence entry keeps them in the ledger as well.
type LogNotify struct {
	log *slog.Logger
	now func() time.Time
}

// NewLogNotify returns a notify action logging to log (slog.Default when nil).
func NewLogNotify(log *slog.Logger) *LogNotify {
	if log == nil {
		log = slog.Default()
	}
	return &LogNotify{log: log, now: time.Now}
}

// Run logs the message. Errors: EINVALID.
func (n *LogNotify) Run(ctx context.Context, params json.RawMessage) (Receipt, error) {
	p, err := decodeNotify(params)
	if err != nil {
		return Receipt{}, err
	}
	id := uuid.NewString()
	inv, _ := InvocationFrom(ctx)
	n.log.InfoContext(ctx, "notify", "id", id, "subject", p.Subject, "message", p.Message,
		"decision_id", inv.DecisionID, "signal_id", inv.SignalID)
	return Receipt{Type: TypeNotify, Target: "log", ID: id, Digest: ora.Digest([]byte(p.Message)), At: n.now().UTC()}, nil
}

// Notify logs a message outside any decision (escalations use it).
func (n *LogNotify) Notify(ctx context.Context, subject, message string) error {
	n.log.InfoContext(ctx, "notify", "subject", subject, "message", message)
	return nil
}
