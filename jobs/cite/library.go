package cite

import (
	"net/url"
	"regexp"
	"strings"
)

// source is what a library holds for one reference.
type source struct {
	read  bool
	title string
	refs  []string
	texts []string
	text  *text
}

// library finds the documents a reference or a title names.
type library struct {
	byRef   map[string]*source
	byTitle map[string]*source
	// known are the packages any document is about: a qualifier that is
	// one of them names a package, not a variable.
	known map[string]bool
}

// newLibrary indexes documents by their normalised references and
// titles; the texts read from one reference are joined.
func newLibrary(docs []Document, window int) *library {
	l := &library{byRef: map[string]*source{}, byTitle: map[string]*source{}, known: map[string]bool{}}
	var all []*source
	for _, d := range docs {
		var src *source
		for _, r := range d.Refs {
			if s := l.byRef[NormalizeRef(r)]; s != nil && r != "" {
				src = s
				break
			}
		}
		if src == nil {
			src = &source{}
			all = append(all, src)
		}
		for _, r := range d.Refs {
			if r != "" {
				l.byRef[NormalizeRef(r)] = src
				src.refs = append(src.refs, r)
			}
		}
		if src.title == "" {
			src.title = d.Title
		}
		if t := titleKey(d.Title); t != "" && l.byTitle[t] == nil {
			l.byTitle[t] = src
		}
		if d.Read {
			src.read = true
			if strings.TrimSpace(d.Text) != "" {
				src.texts = append(src.texts, d.Text)
			}
		}
	}
	for _, src := range all {
		src.text = prepare(src.title, src.refs, strings.Join(src.texts, "\n\n"), window)
		for p := range src.text.pkgs {
			l.known[p] = true
		}
	}
	return l
}

// find returns the source an entry names: by its reference, else by its
// title or its reference taken as a title.
func (l *library) find(e Entry) *source {
	if s := l.byRef[NormalizeRef(e.Ref)]; s != nil {
		return s
	}
	for _, t := range []string{e.Title, e.Ref} {
		if s := l.byTitle[titleKey(t)]; s != nil && titleKey(t) != "" {
			return s
		}
	}
	return nil
}

var nonWordRE = regexp.MustCompile(`[^\p{L}\p{N}/.]+`)

// titleKey is the form in which titles are compared.
func titleKey(t string) string {
	return strings.TrimSpace(nonWordRE.ReplaceAllString(strings.ToLower(t), " "))
}

// bareHostRE is a reference written without its scheme: "pkg.go.dev/x".
var bareHostRE = regexp.MustCompile(`^(?:[a-z0-9-]+\.)+[a-z]{2,}(?:[/:?#]|$)`)

// NormalizeRef is the form in which references are compared: a URL's
// scheme and host lower-cased ("https://" added to a host written
// without it), "www." dropped from its host, its fragment, default port
// and trailing '/' dropped; any other reference trimmed.
func NormalizeRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if bareHostRE.MatchString(strings.ToLower(ref)) {
		ref = "https://" + ref
	}
	u, err := url.Parse(ref)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return strings.TrimSuffix(ref, "/")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.TrimPrefix(strings.ToLower(u.Host), "www.")
	if u.Scheme == "https" {
		host = strings.TrimSuffix(host, ":443")
	}
	if u.Scheme == "http" {
		host = strings.TrimSuffix(host, ":80")
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String()
}
