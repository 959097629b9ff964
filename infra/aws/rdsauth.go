package aws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/rds/auth"
	"github.com/jackc/pgx/v5"
)

// IAMAuth returns a pgx BeforeConnect that puts a fresh RDS IAM auth token
// in each new connection's password, for the connection's host, port and
// user. A token is valid for 15 minutes, and only to open a connection, so
// one is made per connection; making it is local signing, no network call.
// The connection must use TLS (sslmode=require or stricter).
func IAMAuth(region string, creds awssdk.CredentialsProvider) func(context.Context, *pgx.ConnConfig) error {
	return func(ctx context.Context, cc *pgx.ConnConfig) error {
		if cc.User == "" {
			return errors.New("IAM database auth needs a user in DATABASE_URL")
		}
		endpoint := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
		token, err := auth.BuildAuthToken(ctx, endpoint, region, cc.User, creds)
		if err != nil {
			return fmt.Errorf("error making IAM auth token for %s@%s: %w", cc.User, endpoint, err)
		}
		cc.Password = token
		return nil
	}
}
