package embedded

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// dynamoClient opens DynamoDB for store.kind dynamodb. With an endpoint
// (DynamoDB Local, or another emulator) it signs with placeholder static
// credentials, which the emulator accepts and nothing else does; without one
// it talks to AWS in d.Region with the default credential chain (environment,
// shared config and SSO profiles, web identity, container or instance role),
// as ora's Lambdas and `ora reason` do.
func dynamoClient(ctx context.Context, d DynamoConfig) (*dynamodb.Client, error) {
	if d.Endpoint != "" {
		return dynamodb.New(dynamodb.Options{
			Region:                          d.Region,
			Credentials:                     credentials.NewStaticCredentialsProvider("local", "local", ""),
			BaseEndpoint:                    aws.String(d.Endpoint),
			DisableValidateResponseChecksum: true,
		}), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(d.Region))
	if err != nil {
		return nil, fmt.Errorf("embedded: store.dynamodb: load the AWS config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg), nil
}
