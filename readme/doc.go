// Package readme holds no code: its tests check README.md's claims against the
// repository (counts, make targets, the wave diagram) and walk through the
// README as a new user would (scripts/readme-walkthrough.sh on a fresh clone)
// and run every docs/ page's commands (scripts/docs-walkthrough.sh).
package readme
