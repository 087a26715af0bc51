package dynamo

import (
	"context"
	"errors"
	"net"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ora-runtime/ora/shared/ora"
)

// Cancellation reason codes of TransactionCanceledException.
const (
	reasonConditionalCheckFailed = "ConditionalCheckFailed"
	reasonNone                   = "None"
)

// transientReasons are the cancellation reasons a retry may get past.
var transientReasons = map[string]bool{
	"TransactionConflict":                    true,
	"ThrottlingError":                        true,
	"ProvisionedThroughputExceeded":          true,
	"RequestLimitExceeded":                   true,
	"ThrottlingException":                    true,
	"ProvisionedThroughputExceededException": true,
}

// failedCondition reports whether err is a failed condition: a
// ConditionalCheckFailedException (index 0) or a cancelled transaction whose
// reason at index is ConditionalCheckFailed. item is what the failing write
// found (ReturnValuesOnConditionCheckFailure=ALL_OLD), empty when there was no
// item.
func failedCondition(err error) (index int, item map[string]types.AttributeValue, ok bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return 0, ccf.Item, true
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if r.Code != nil && *r.Code == reasonConditionalCheckFailed {
				return i, r.Item, true
			}
		}
	}
	return 0, nil, false
}

// translate maps an SDK error onto ora's kinds at the adapter's boundary:
//
//   - a failed condition (ConditionalCheckFailedException, or a cancelled
//     transaction with a ConditionalCheckFailed reason): ECONFLICT; callers that
//     can say what is stored intercept it first with failedCondition and carry
//     the decoded item;
//   - throttling (ProvisionedThroughputExceeded, RequestLimitExceeded,
//     ThrottlingException), transaction conflicts, 5xx answers, an internal
//     server error, a context deadline or a network timeout: ETRANSIENT;
//   - anything else is returned as it is (EINTERNAL to ora.ErrorCode).
func translate(err error) error {
	if err == nil {
		return nil
	}
	if _, _, ok := failedCondition(err); ok {
		return &ora.Error{Code: ora.ECONFLICT, Message: "conditional check failed", Err: err}
	}
	if isTransient(err) {
		return ora.Transient(err, "dynamodb: retry later")
	}
	return err
}

func isTransient(err error) bool {
	var (
		pte  *types.ProvisionedThroughputExceededException
		rle  *types.RequestLimitExceeded
		thr  *types.ThrottlingException
		ise  *types.InternalServerError
		tce  *types.TransactionCanceledException
		txc  *types.TransactionConflictException
		tip  *types.TransactionInProgressException
		resp *smithyhttp.ResponseError
		api  smithy.APIError
		nerr net.Error
	)
	switch {
	case errors.As(err, &pte), errors.As(err, &rle), errors.As(err, &thr), errors.As(err, &ise),
		errors.As(err, &txc), errors.As(err, &tip):
		return true
	case errors.As(err, &tce):
		// Cancelled only for reasons a retry may get past (and "None" for the
		// items that did not fail).
		transient := false
		for _, r := range tce.CancellationReasons {
			code := ""
			if r.Code != nil {
				code = *r.Code
			}
			switch {
			case transientReasons[code]:
				transient = true
			case code == reasonNone || code == "":
			default:
				return false
			}
		}
		return transient
	case errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &nerr) && nerr.Timeout():
		return true
	case errors.As(err, &resp) && resp.HTTPStatusCode() >= 500:
		return true
	case errors.As(err, &api) && (api.ErrorCode() == "ThrottlingException" || api.ErrorCode() == "Throttling" ||
		api.ErrorFault() == smithy.FaultServer):
		return true
	}
	return false
}
