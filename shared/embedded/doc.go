// Package embedded is ora's embedded runtime, what `ora dev` runs: the ledger
// (SQLite, or DynamoDB Local), the local Step Functions engine running
// statemachines/ora.asl.json with every task handled in-process by the same
// handlers the Lambdas use, the HTTP API, cron schedules and a watched folder.
// No AWS account is needed.
package embedded
