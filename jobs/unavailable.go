package jobs

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// DatabaseUnavailable reports whether err says Postgres could not be
// reached or stopped serving (a failed connect, a connection that broke
// before the query was sent, a server shutting down or starting up, a
// connection exception), rather than that a query was wrong. It looks at
// Postgres's own errors only, so a failed model call is never taken for it.
func DatabaseUnavailable(err error) bool {
	var connectErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return false
	case errors.As(err, &connectErr), pgconn.SafeToRetry(err):
		return true
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin shutdown, crash shutdown, cannot connect now
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exception
	}
	return false
}
