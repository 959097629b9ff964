package prompts

import _ "embed" // for the go:embed of Compaction

// Compaction tells every agent, before it happens, that old results are
// replaced by stubs, what a stub keeps and what to keep itself.
//
//go:embed compaction.md
var Compaction string
