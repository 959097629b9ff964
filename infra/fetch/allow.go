package fetch

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// EnvAllow is the allow-list of networks and ports, for tests and local
// development: comma-separated NETWORK/BITS:PORT or NETWORK/BITS:LOW-HIGH,
// e.g. 127.0.0.1/32:18000-18999,[::1]/128:8080.
const EnvAllow = "GB_FETCH_ALLOW"

// EnvPorts lists the ports public addresses may be fetched on, comma
// separated (default 80,443).
const EnvPorts = "GB_FETCH_PORTS"

// Rule lets a network and a port range through the guard, whatever kind
// of address it is.
type Rule struct {
	Prefix   netip.Prefix
	Low, Top uint16
}

// Matches reports whether ip:port is in the rule.
func (r Rule) Matches(ip netip.Addr, port uint16) bool {
	ip = ip.WithZone("")
	if ip.Is4In6() && r.Prefix.Addr().Is4() {
		ip = ip.Unmap()
	}
	return r.Prefix.Contains(ip) && port >= r.Low && port <= r.Top
}

// String is the rule as GB_FETCH_ALLOW writes it.
func (r Rule) String() string {
	if r.Low == r.Top {
		return fmt.Sprintf("%s:%d", r.Prefix, r.Low)
	}
	return fmt.Sprintf("%s:%d-%d", r.Prefix, r.Low, r.Top)
}

// ParseAllow parses a GB_FETCH_ALLOW value; empty means no rule.
func ParseAllow(s string) ([]Rule, error) {
	var rules []Rule
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		r, err := parseRule(item)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w (want NETWORK/BITS:PORT or NETWORK/BITS:LOW-HIGH, e.g. 127.0.0.1/32:18000-18999)", EnvAllow, item, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseRule(item string) (Rule, error) {
	slash := strings.LastIndexByte(item, '/')
	colon := strings.LastIndexByte(item, ':')
	if slash < 0 || colon < slash {
		return Rule{}, fmt.Errorf("no /BITS:PORT")
	}
	netText := strings.NewReplacer("[", "", "]", "").Replace(item[:colon])
	prefix, err := netip.ParsePrefix(netText)
	if err != nil {
		return Rule{}, fmt.Errorf("bad network: %w", err)
	}
	low, top, err := parsePorts(item[colon+1:])
	if err != nil {
		return Rule{}, err
	}
	return Rule{Prefix: prefix.Masked(), Low: low, Top: top}, nil
}

func parsePorts(s string) (uint16, uint16, error) {
	lowText, topText, isRange := strings.Cut(s, "-")
	low, err := parsePort(lowText)
	if err != nil {
		return 0, 0, err
	}
	top := low
	if isRange {
		if top, err = parsePort(topText); err != nil {
			return 0, 0, err
		}
	}
	if top < low {
		return 0, 0, fmt.Errorf("port range %s is empty", s)
	}
	return low, top, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("bad port %q: want 1-65535", s)
	}
	return uint16(n), nil
}

// ParsePorts parses a GB_FETCH_PORTS value (comma-separated ports).
func ParsePorts(s string) ([]uint16, error) {
	var ports []uint16
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		p, err := parsePort(item)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvPorts, err)
		}
		ports = append(ports, p)
	}
	return ports, nil
}
