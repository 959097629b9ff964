package conversefake

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// service is the signing name of Bedrock Runtime.
const service = "bedrock"

// authorization is an Authorization header of SigV4.
type authorization struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

// parseAuthorization reads "AWS4-HMAC-SHA256 Credential=AKID/20261202/
// us-east-1/bedrock/aws4_request, SignedHeaders=a;b, Signature=hex".
func parseAuthorization(h string) (authorization, bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return authorization{}, false
	}
	var a authorization
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return authorization{}, false
			}
			a.accessKey, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	return a, a.accessKey != "" && len(a.signedHeaders) > 0 && a.signature != ""
}

// authenticate checks that the request is signed with SigV4 by the
// configured credentials for the Region and Bedrock, and that the
// signature is right: the request, cut to the headers the client signed,
// is signed again with the same time and must give the same signature.
func (s *Server) authenticate(r *http.Request, body []byte) *awsError {
	a, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok {
		return errorf(http.StatusForbidden, TypeMissingAuthToken, "Missing Authentication Token")
	}
	if subtle.ConstantTimeCompare([]byte(a.accessKey), []byte(s.cfg.AccessKeyID)) != 1 {
		return errorf(http.StatusForbidden, TypeUnknownClient, "The security token included in the request is invalid.")
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || a.region != s.cfg.Region || a.service != service || a.date != signedAt.Format("20060102") {
		return errorf(http.StatusForbidden, TypeBadSignature, "Credential should be scoped to a valid Region and service (%s, %s).", s.cfg.Region, service)
	}
	if skew := s.cfg.Now().Sub(signedAt); skew > 5*time.Minute || skew < -5*time.Minute {
		return errorf(http.StatusForbidden, TypeBadSignature, "Signature expired: the request was signed at %s.", signedAt.Format(time.RFC3339))
	}
	want, err := s.resign(r, body, a, signedAt)
	if err != nil || subtle.ConstantTimeCompare([]byte(want), []byte(a.signature)) != 1 {
		return errorf(http.StatusForbidden, TypeBadSignature, "The request signature we calculated does not match the signature you provided.")
	}
	return nil
}

// resign is the signature of r, cut to the headers a names, with the
// server's credentials.
func (s *Server) resign(r *http.Request, body []byte, a authorization, at time.Time) (string, error) {
	u, err := url.Parse("http://" + r.Host + r.URL.RequestURI())
	if err != nil {
		return "", err
	}
	c := &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: http.Header{}, ContentLength: int64(len(body))}
	for _, name := range a.signedHeaders {
		if name == "host" || name == "content-length" {
			continue
		}
		if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
			c.Header[http.CanonicalHeaderKey(name)] = v
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: s.cfg.AccessKeyID, SecretAccessKey: s.cfg.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, c, hex.EncodeToString(sum[:]), service,
		s.cfg.Region, at); err != nil {
		return "", err
	}
	got, ok := parseAuthorization(c.Header.Get("Authorization"))
	if !ok {
		return "", errBadResign
	}
	return got.signature, nil
}

// errBadResign: the signer wrote no Authorization header it could read.
var errBadResign = &awsError{status: http.StatusForbidden, typ: TypeBadSignature, message: "could not sign again"}

func (e *awsError) Error() string { return e.typ + ": " + e.message }
