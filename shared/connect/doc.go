// Package connect resolves a connection name to an authenticated HTTP client:
// the role EventBridge connections play for Step Functions' HTTP Task. A
// connection has a base URL (scheme, host, port and path prefix: a request
// outside it is refused before it is sent) and an auth kind (bearer, api_key,
// basic, oauth2_client_credentials) whose secret is read at send time from a
// Source: the configuration file locally (Literal), Secrets Manager on AWS
// (SecretsManager). Credentials therefore never appear in a decision, its
// evidence or anything ora writes; the tokens an OAuth 2.0 server mints are
// registered in an *ora.Secrets as they appear.
package connect
