package schedule

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRefusedValue: Postgres errors the same values meet at every attempt
// become InputErrors; a lost connection stays worth a retry.
func TestRefusedValue(t *testing.T) {
	t.Parallel()
	for code, refused := range map[string]bool{
		"54000": true,  // program_limit_exceeded: index row size
		"22001": true,  // string_data_right_truncation
		"22021": true,  // character_not_in_repertoire
		"08006": false, // connection_failure
		"57P01": false, // admin_shutdown
		"40001": false, // serialization_failure
	} {
		err := fmt.Errorf("error starting scheduled research: %w", &pgconn.PgError{Code: code, Message: "m"})
		var ie *InputError
		if got := errors.As(refusedValue(err), &ie); got != refused {
			t.Errorf("SQLSTATE %s: refused %v, want %v", code, got, refused)
		}
	}
}
