package dynamotest

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size by DynamoDB's rules: each attribute's name plus
// its value; a string is its UTF-8 bytes, a number at most 21 bytes, a map 3
// bytes plus, per element, its name, its value and 1 byte. It panics on
// other attribute types, which ora's items do not use.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return 21
	case *types.AttributeValueMemberM:
		n := 3
		for name, x := range v.Value {
			n += len(name) + valueSize(x) + 1
		}
		return n
	}
	panic(fmt.Sprintf("dynamotest.ItemSize: %T", v))
}
