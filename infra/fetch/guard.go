package fetch

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
)

// ErrRefused marks a fetch refused by the guard; errors wrapping it are
// *RefusedError values that say why.
var ErrRefused = errors.New("refused")

// RefusedError is a refused URL or address, with the reason.
type RefusedError struct {
	// Target is what was refused: a URL, a host, or an IP and port.
	Target string
	Reason string
}

// Error says what was refused and why.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused to fetch %s: %s", e.Target, e.Reason)
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

func refused(target, format string, args ...any) error {
	return &RefusedError{Target: target, Reason: fmt.Sprintf(format, args...)}
}

// reserved lists the ranges refused besides those netip classifies, each
// with its reason.
var reserved = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "in 0.0.0.0/8, \"this network\""},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address (100.64.0.0/10)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address (192.0.2.0/24)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address (203.0.113.0/24)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible IPv6 address (::/96, deprecated)"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated IPv6 address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address, which may reach any IPv4 host"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address (100::/64)"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address (2001::/23, Teredo among them)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address (2001:db8::/32)"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address, which embeds an IPv4 address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (fec0::/10, deprecated)"},
}

// whyRefused says why ip may not be fetched, or "" when it may.
func whyRefused(ip netip.Addr) string {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		if why := whyRefused(ip.Unmap()); why != "" {
			return "an IPv4-mapped IPv6 form of " + ip.Unmap().String() + ", " + why
		}
		return ""
	}
	switch {
	case !ip.IsValid():
		return "not a valid IP address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip == netip.AddrFrom4([4]byte{169, 254, 169, 254}):
		return "the cloud metadata address (link-local)"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.Is4() && ip.IsPrivate():
		return "a private address (RFC 1918)"
	case ip.IsPrivate():
		return "a unique-local address (fc00::/7)"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, r := range reserved {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

// policy is what the guard lets through.
type policy struct {
	ports []uint16
	allow []Rule
}

// check returns nil when ip:port may be dialled, or a *RefusedError. host
// is the name ip was resolved from ("" for an IP literal), for the reason.
func (p policy) check(host string, ip netip.Addr, port uint16) error {
	target := netip.AddrPortFrom(ip, port).String()
	for _, r := range p.allow {
		if r.Matches(ip, port) {
			return nil
		}
	}
	if why := whyRefused(ip); why != "" {
		if host != "" {
			return refused(net.JoinHostPort(host, strconv.Itoa(int(port))), "%s resolves to %s, which is %s", host, ip, why)
		}
		return refused(target, "%s is %s", ip, why)
	}
	if !slices.Contains(p.ports, port) {
		return refused(target, "port %d is not allowed (only %v)", port, p.ports)
	}
	return nil
}
