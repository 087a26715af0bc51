// Package mcp adapts the Model Context Protocol's official Go SDK
// (github.com/modelcontextprotocol/go-sdk) to ora: a Client over the
// configured servers (`mcp_servers`: stdio commands in `ora dev`,
// streamable HTTP in both homes) that lists their tools and calls them
// with a per-call timeout, a bound on the result ora keeps, and an
// idempotency key in the call's _meta. The reasoner offers read-only tools
// to the model through it; the actor's mcp.call action calls tools that
// change something through it.
package mcp
