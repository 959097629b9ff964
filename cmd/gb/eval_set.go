package main

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// evalSets are the question sets shipped with gb: `gb eval` without a file
// runs godoc.yaml.
//
//go:embed evalsets/*.yaml
var evalSets embed.FS

// evalSetDefault is the shipped set gb eval runs without a file.
const evalSetDefault = "evalsets/godoc.yaml"

// evalQuestion is one question of a set.
type evalQuestion struct {
	// ID names the question in the table (default q1, q2, …).
	ID       string `json:"id" yaml:"id"`
	Question string `json:"question" yaml:"question"`
	// Dataset is the knowledge base the research uses (the server's
	// default when empty); Web marks a question for web research, which
	// needs a search provider (GB_SEARCH_*).
	Dataset string `json:"dataset,omitempty" yaml:"dataset,omitempty"`
	Web     bool   `json:"web,omitempty" yaml:"web,omitempty"`
	// Facts are regular expressions a good answer matches, each one fact.
	Facts []string `json:"facts,omitempty" yaml:"facts,omitempty"`
	// Sources are what the report should cite: each a regular expression
	// one of the URLs of its sources list must match.
	Sources []string `json:"sources,omitempty" yaml:"sources,omitempty"`
	// Unanswerable marks a question the dataset cannot answer: the right
	// answer says so (notCoveredRE), and its facts, if any, are what it
	// must say besides.
	Unanswerable bool `json:"unanswerable,omitempty" yaml:"unanswerable,omitempty"`
	// MaxSteps, when set, caps the steps of each agent of the research.
	MaxSteps int `json:"max_steps,omitempty" yaml:"max_steps,omitempty"`

	facts, sources []*regexp.Regexp
}

// evalSet is a question set.
type evalSet struct {
	Name      string         `json:"name" yaml:"name"`
	Questions []evalQuestion `json:"questions" yaml:"questions"`
}

// loadEvalSet reads a set from a file: YAML (a name and a list of
// questions, or the list alone) or JSONL (one question per line), by its
// extension; "" reads the shipped godoc set.
func loadEvalSet(path string) (*evalSet, error) {
	var data []byte
	var err error
	name := strings.TrimSuffix(filepath.Base(cmpOr(path, evalSetDefault)), filepath.Ext(cmpOr(path, evalSetDefault)))
	if path == "" {
		data, err = evalSets.ReadFile(evalSetDefault)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the question set: %w", err)
	}
	var set *evalSet
	if strings.HasSuffix(path, ".jsonl") {
		set, err = parseJSONLSet(data)
	} else {
		set, err = parseYAMLSet(data)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the question set %s: %w", cmpOr(path, evalSetDefault), err)
	}
	set.Name = cmpOr(set.Name, name)
	if err := set.compile(); err != nil {
		return nil, usageErrorf("question set %s: %w", cmpOr(path, evalSetDefault), err)
	}
	return set, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseYAMLSet reads a YAML set: {name, questions} or a bare list.
func parseYAMLSet(data []byte) (*evalSet, error) {
	var set evalSet
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&set); err == nil {
		return &set, nil
	}
	var list []evalQuestion
	dec = yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("want a mapping with name and questions, or a list of questions: %w", err)
	}
	return &evalSet{Questions: list}, nil
}

// parseJSONLSet reads one question per line; blank lines and lines
// starting with # are skipped.
func parseJSONLSet(data []byte) (*evalSet, error) {
	set := &evalSet{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var q evalQuestion
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		set.Questions = append(set.Questions, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("error reading lines: %w", err)
	}
	return set, nil
}

// compile checks the set and compiles its patterns.
func (s *evalSet) compile() error {
	if len(s.Questions) == 0 {
		return errors.New("it has no questions")
	}
	ids := map[string]bool{}
	for i := range s.Questions {
		q := &s.Questions[i]
		q.ID = cmpOr(q.ID, fmt.Sprintf("q%d", i+1))
		if ids[q.ID] {
			return fmt.Errorf("two questions have the id %q", q.ID)
		}
		ids[q.ID] = true
		if strings.TrimSpace(q.Question) == "" {
			return fmt.Errorf("%s has no question", q.ID)
		}
		if q.Web && q.Dataset != "" {
			return fmt.Errorf("%s asks for the web and the dataset %q: give one", q.ID, q.Dataset)
		}
		if len(q.Facts) == 0 && !q.Unanswerable {
			return fmt.Errorf("%s has no facts: give the patterns a good answer matches", q.ID)
		}
		var err error
		if q.facts, err = compileAll(q.Facts); err != nil {
			return fmt.Errorf("%s: fact %w", q.ID, err)
		}
		if q.sources, err = compileAll(q.Sources); err != nil {
			return fmt.Errorf("%s: source %w", q.ID, err)
		}
	}
	return nil
}

func compileAll(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		out[i] = re
	}
	return out, nil
}
