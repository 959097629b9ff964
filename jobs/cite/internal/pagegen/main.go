// Command pagegen writes the texts of the Go toolchain's HTML documents
// that the labelled set of package cite is written against, extracted as
// the service extracts a fetched page (fetch.Extract), into
// jobs/cite/testdata/pages. Each file is the page's title, a line "====",
// then its readable text.
//
//	go run ./jobs/cite/internal/pagegen
package main

import (
	"fmt"
	"go/build"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"

	"github.com/gbresearch/gb/infra/fetch"
)

// pages are the documents of GOROOT/doc the labelled set uses.
var pages = []string{"go_mem", "asm", "go_spec"}

// titleRE finds the title in the metadata comment that opens a Go document.
var titleRE = regexp.MustCompile(`"Title":\s*"([^"]+)"`)

func main() {
	out := filepath.Join("jobs", "cite", "testdata", "pages")
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	for _, name := range pages {
		if err := write(name, out); err != nil {
			slog.Error("could not write a page", "page", name, "err", err)
			os.Exit(1)
		}
	}
}

// write extracts one page and writes it.
func write(name, out string) error {
	body, err := os.ReadFile(filepath.Join(build.Default.GOROOT, "doc", name+".html"))
	if err != nil {
		return fmt.Errorf("error reading the page: %w", err)
	}
	title, text, err := fetch.Extract(body, "text/html; charset=utf-8", nil)
	if err != nil {
		return fmt.Errorf("error extracting the page: %w", err)
	}
	if m := titleRE.FindSubmatch(body); title == "" && m != nil {
		title = string(m[1])
	}
	content := fmt.Sprintf("%s\n====\n%s\n", title, text)
	if err := os.WriteFile(filepath.Join(out, name+".txt"), []byte(content), 0o644); err != nil {
		return fmt.Errorf("error writing the page: %w", err)
	}
	return nil
}
