package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// guardedDialer resolves a host itself and dials only addresses the policy
// accepts, so what is checked is what is connected to.
type guardedDialer struct {
	policy   policy
	resolver Resolver
	dial     DialFunc
}

// DialContext is the transport's dialer.
func (g guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("fetch: bad address %q: %w", address, err)
	}
	port64, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, refused(address, "bad port %q", portText)
	}
	port := uint16(port64)
	ips, name, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		if err := g.policy.check(name, ip, port); err != nil {
			errs = append(errs, err)
			continue
		}
		conn, err := g.dial(ctx, network, netip.AddrPortFrom(ip, port).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	if len(ips) > 1 && allRefused(errs) {
		reasons := make([]string, len(errs))
		for i, err := range errs {
			var re *RefusedError
			errors.As(err, &re)
			reasons[i] = re.Reason
		}
		return nil, refused(host, "every address of %s is refused: %s", host, strings.Join(reasons, "; "))
	}
	return nil, errors.Join(errs...)
}

// resolve returns the IPs of host (itself when it is an IP literal) and
// the name they were resolved from ("" for a literal).
func (g guardedDialer) resolve(ctx context.Context, host string) ([]netip.Addr, string, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, "", nil
	}
	ips, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, host, fmt.Errorf("cannot resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, host, fmt.Errorf("%s has no address", host)
	}
	return ips, host, nil
}

func allRefused(errs []error) bool {
	for _, err := range errs {
		if !errors.Is(err, ErrRefused) {
			return false
		}
	}
	return len(errs) > 0
}

// control is the default dialer's last check, on the socket's own address.
func (p policy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused(address, "not an IP address and port")
	}
	return p.check("", ap.Addr(), ap.Port())
}
