package bedrock

import (
	"errors"
	"strings"

	"github.com/aws/smithy-go"
)

// Meaning is what a Bedrock error says about the request that caused it:
// whether the next model of the list may accept the same request.
type Meaning string

// The meanings of MessagePolicy.
const (
	// NextModel: the error is about the model (not available, not enabled
	// for the account, not offered in the region or on demand, lacking a
	// feature, throttled): the next model may accept the same request.
	NextModel Meaning = "next model may accept"
	// NoModel: the error is about the request (too long, malformed, a schema
	// Bedrock refuses, an account barred from the API): every model would
	// refuse it, so ora does not spend a call on the next one.
	NoModel Meaning = "no model will accept"
)

// MessageRule classifies one Bedrock error message: an error whose code is
// Code and whose message contains Contains (case-insensitive) has Meaning.
// Example is the message as Bedrock sends it.
type MessageRule struct {
	Code     string
	Contains string
	Meaning  Meaning
	Example  string
}

// MessagePolicy classifies Bedrock errors by their message, first match
// wins. An error it does not list takes its code's default: NextModel for
// the codes ErrorPolicy falls back on (throttling, a model down, access
// denied, not found), NoModel for a ValidationException (a request error
// is the safe reading: it costs no second call).
var MessagePolicy = []MessageRule{
	// The request: no model will accept it.
	{Code: "ValidationException", Contains: "input is too long", Meaning: NoModel,
		Example: "The model returned the following errors: Input is too long for requested model."},
	{Code: "ValidationException", Contains: "malformed input request", Meaning: NoModel,
		Example: "Malformed input request: #: required key [messages] not found, please reformat your input and try again."},
	{Code: "ValidationException", Contains: "validation error detected", Meaning: NoModel,
		Example: "1 validation error detected: Value at 'messages' failed to satisfy constraint: Member must have length greater than or equal to 1"},
	{Code: "ValidationException", Contains: "must alternate between user and assistant", Meaning: NoModel,
		Example: "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."},
	{Code: "ValidationException", Contains: "inputschema", Meaning: NoModel,
		Example: "The value at toolConfig.tools.0.toolSpec.inputSchema.json.type must be one of the following: object."},
	{Code: "AccessDeniedException", Contains: "not authorized to invoke this api operation", Meaning: NoModel,
		Example: "Your account is not authorized to invoke this API operation."},
	// The model: the next one may accept the same request.
	{Code: "ValidationException", Contains: "model identifier is invalid", Meaning: NextModel,
		Example: "The provided model identifier is invalid."},
	{Code: "ValidationException", Contains: "on-demand throughput", Meaning: NextModel,
		Example: "Invocation of model ID anthropic.claude-3-7-sonnet-20250219-v1:0 with on-demand throughput isn’t supported. Retry your request with the ID or ARN of an inference profile that contains this model."},
	{Code: "ValidationException", Contains: "model doesn't support", Meaning: NextModel,
		Example: "This model doesn't support tool use."},
	{Code: "ValidationException", Contains: "not available for this model", Meaning: NextModel,
		Example: "data retention mode 'default' is not available for this model"},
	{Code: "AccessDeniedException", Contains: "access to the model", Meaning: NextModel,
		Example: "You don't have access to the model with the specified model ID."},
	{Code: "ResourceNotFoundException", Contains: "use case details", Meaning: NextModel,
		Example: "Model use case details have not been submitted for this account. Fill out the Anthropic use case details form before using the model."},
	{Code: "ResourceNotFoundException", Contains: "end of its life", Meaning: NextModel,
		Example: "This model version has reached the end of its life. Please refer to the AWS documentation for more details."},
	{Code: "ThrottlingException", Contains: "too many requests", Meaning: NextModel,
		Example: "Too many requests, please wait before trying again."},
	{Code: "ThrottlingException", Contains: "too many tokens", Meaning: NextModel,
		Example: "Too many tokens, please wait before trying again."},
}

// meaningOf classifies err by MessagePolicy, or by its code's default.
func meaningOf(err error) Meaning {
	code, msg := errorCode(err), ""
	var api smithy.APIError
	if errors.As(err, &api) {
		msg = strings.ToLower(api.ErrorMessage())
	}
	for _, r := range MessagePolicy {
		if r.Code == code && strings.Contains(msg, r.Contains) {
			return r.Meaning
		}
	}
	if ruleFor(err).Fallback {
		return NextModel
	}
	return NoModel
}
