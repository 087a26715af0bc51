// tools/ holds the pinned npm tools (package.json), not Go code. This file
// makes it a module of its own so `./...` in the repository root never walks
// into node_modules.
module github.com/ora-runtime/ora/tools

go 1.26
