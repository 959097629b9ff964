package kb

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestAnyTerms(t *testing.T) {
	cases := map[string]struct{ terms, excluded []string }{
		"tidal power":               {[]string{"tidal", "power"}, nil},
		"tidal or power OR tidal":   {[]string{"tidal", "power"}, nil},
		`"tidal power" -wind Tidal`: {[]string{`"tidal power"`, "Tidal"}, []string{"-wind"}},
		`tidal -"wind farm" "open`:  {[]string{"tidal", `"open"`}, []string{`-"wind farm"`}},
		`a"b c" d`:                  {[]string{"a", `"b c"`, "d"}, nil},
		`"  " "" x`:                 {[]string{"x"}, nil},
		"a or or or b":              {[]string{"a", "b"}, nil},
		`- -- " or`:                 {nil, nil},
		"sync.WaitGroup Wait":       {[]string{"sync.WaitGroup", "Wait"}, nil},
	}
	for q, want := range cases {
		terms, excluded := anyTerms(q)
		if !slices.Equal(terms, want.terms) || !slices.Equal(excluded, want.excluded) {
			t.Errorf("anyTerms(%q) = %q, %q; want %q, %q", q, terms, excluded, want.terms, want.excluded)
		}
	}
	var many []string
	for i := range 3 * MaxQueryTerms {
		many = append(many, fmt.Sprintf("w%d -x%d", i, i))
	}
	terms, excluded := anyTerms(strings.Join(many, " "))
	if len(terms) != MaxQueryTerms || len(excluded) != MaxQueryTerms {
		t.Errorf("%d terms and %d excluded, want at most %d of each", len(terms), len(excluded), MaxQueryTerms)
	}
}
