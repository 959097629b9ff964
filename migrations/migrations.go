// Package migrations holds the numbered SQL migrations of the gb schema,
// embedded so every binary carries them. They are applied by goose (see
// infra/db.Migrate); River's own tables come from rivermigrate, not from here.
//
// This package is a leaf: it imports nothing of the project.
package migrations

import "embed"

// FS holds the migration files, named NNN_name.sql in goose's format.
//
//go:embed *.sql
var FS embed.FS
