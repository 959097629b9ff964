package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gbresearch/gb/jobs/prompts"
)

// This file is the registry of sub-agent types: each a frozen definition in
// a Markdown file with a small header (name, description, the tools it may
// call, its caps) and the part of the system prompt it adds. The built-in
// types are embedded (jobs/prompts/types); operators add their own from a
// directory (LoadTypes, from GB_AGENT_TYPES_DIR), checked at start.

// DefaultType is the type of a sub-agent spawned with none.
const DefaultType = "researcher"

// maxWallClock bounds a type's wall-clock cap.
const maxWallClock = 24 * time.Hour

// AgentType is one sub-agent type.
type AgentType struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Tools is its allow-list; nil means every tool it may have at its
	// depth.
	Tools []string `json:"tools"`
	// MaxSteps caps the steps of its sub-agents.
	MaxSteps int `json:"max_steps"`
	// WallClock caps how long one of its sub-agents may run, from its
	// spawn; past it the sub-agent ends timed_out. 0 means no cap.
	WallClock time.Duration `json:"wall_clock"`
	// Prompt is the part of the system prompt it adds.
	Prompt string `json:"prompt"`
}

// allows reports whether the type lets its agents call the tool.
func (t *AgentType) allows(tool string) bool { return t.Tools == nil || slices.Contains(t.Tools, tool) }

// Types is a registry of sub-agent types.
type Types struct {
	byName map[string]*AgentType
	names  []string
}

var typeNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,39}$`)

// LoadTypes returns the built-in types and, when dir is not empty, the
// types of its *.md files, which may not reuse a built-in name. An error
// names the file and the field at fault.
func LoadTypes(dir string) (*Types, error) {
	t := &Types{byName: map[string]*AgentType{}}
	if err := t.addFS(prompts.Types, "types", "built-in type"); err != nil {
		return nil, err
	}
	if dir == "" {
		return t, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("agent types directory: %w", err)
	}
	if err := t.addFS(os.DirFS(dir), ".", dir); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Types) addFS(fsys fs.FS, root, where string) error {
	files, err := fs.Glob(fsys, path.Join(root, "*.md"))
	if err != nil {
		return fmt.Errorf("listing agent types in %s: %w", where, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return fmt.Errorf("reading agent type %s/%s: %w", where, path.Base(f), err)
		}
		at, err := parseType(string(b))
		if err != nil {
			return fmt.Errorf("agent type %s/%s: %w", where, path.Base(f), err)
		}
		if _, dup := t.byName[at.Name]; dup {
			return fmt.Errorf("agent type %s/%s: name: %q is already a type", where, path.Base(f), at.Name)
		}
		t.byName[at.Name] = at
		t.names = append(t.names, at.Name)
	}
	return nil
}

// parseType reads one type file: a YAML header between --- lines (the
// front matter of Markdown tools: name, description, tools as a list or
// a comma-separated string, max_steps, wall_clock), then the prompt part.
func parseType(text string) (*AgentType, error) {
	rest, ok := strings.CutPrefix(strings.TrimLeft(text, "\ufeff"), "---\n")
	if !ok {
		return nil, errors.New("header: the file must start with a --- line, then name, description, tools, max_steps and wall_clock fields, then ---")
	}
	header, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return nil, errors.New("header: no closing --- line")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(header), &doc); err != nil {
		return nil, fmt.Errorf("header: not YAML: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("header: must be YAML fields, one \"key: value\" a line")
	}
	t := &AgentType{Prompt: strings.TrimSpace(body)}
	seen := map[string]bool{}
	fields := doc.Content[0].Content
	for i := 0; i+1 < len(fields); i += 2 {
		key := fields[i].Value
		if seen[key] {
			return nil, fmt.Errorf("%s: given twice", key)
		}
		seen[key] = true
		val, err := headerValue(key, fields[i+1])
		if err != nil {
			return nil, err
		}
		if err := t.set(key, strings.TrimSpace(val)); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"name", "description", "tools", "max_steps"} {
		if !seen[k] {
			return nil, fmt.Errorf("%s: is required", k)
		}
	}
	if t.Prompt == "" {
		return nil, errors.New("prompt: the part after the header is empty")
	}
	return t, nil
}

// headerValue is a header field's value as text: a scalar as written, a
// list of scalars (tools: [search, read]) joined by commas.
func headerValue(key string, n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		items := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("%s: a list may hold only names", key)
			}
			items = append(items, c.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("%s: must be a value or a list, not a mapping", key)
}

// set sets one header field.
func (t *AgentType) set(key, val string) error {
	switch key {
	case "name":
		if !typeNameRE.MatchString(val) {
			return fmt.Errorf("name: %q must be 1 to 40 lowercase letters, digits, - or _, starting with a letter", val)
		}
		t.Name = val
	case "description":
		if val == "" || len([]rune(val)) > 200 {
			return errors.New("description: must be 1 to 200 characters")
		}
		t.Description = val
	case "tools":
		if val == "all" {
			return nil
		}
		t.Tools = []string{}
		for _, name := range strings.Split(val, ",") {
			name = strings.TrimSpace(name)
			if _, ok := tools[name]; !ok {
				return fmt.Errorf("tools: %q is not a tool; the tools are %s (or all)", name, strings.Join(toolList(), ", "))
			}
			t.Tools = append(t.Tools, name)
		}
	case "max_steps":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > MaxMaxSteps {
			return fmt.Errorf("max_steps: %q must be a whole number from 1 to %d", val, MaxMaxSteps)
		}
		t.MaxSteps = n
	case "wall_clock":
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 || d > maxWallClock {
			return fmt.Errorf("wall_clock: %q must be a duration from 0 (no cap) to %s, like 10m", val, maxWallClock)
		}
		t.WallClock = d
	default:
		return fmt.Errorf("%s: unknown field; the fields are name, description, tools, max_steps and wall_clock", key)
	}
	return nil
}

// toolList is every tool's name, sorted.
func toolList() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns the named type.
func (t *Types) Get(name string) (*AgentType, bool) {
	at, ok := t.byName[name]
	return at, ok
}

// Names lists the types, built-in ones first.
func (t *Types) Names() []string { return slices.Clone(t.names) }

// describe is one line per type, for spawn_subagent's description: its
// description, then the tools it is given, derived from its allow-list and
// what the agent offers (available), so that the two cannot differ.
func (t *Types) describe(available func(tool string) bool) string {
	var b strings.Builder
	for _, n := range t.names {
		at := t.byName[n]
		tools := "every tool of its place in the tree"
		if at.Tools != nil {
			given := slices.DeleteFunc(slices.Clone(at.Tools), func(tool string) bool { return !available(tool) })
			tools = strings.Join(given, ", ")
			if len(given) == 0 {
				tools = "none"
			}
		}
		fmt.Fprintf(&b, "%s: %s; tools: %s. ", n, at.Description, tools)
	}
	return strings.TrimSpace(b.String())
}

// toolAvailable reports whether the agent offers a tool at all: the web
// tools need a search and a fetch provider, the sibling tools and
// send_input a messenger.
func (a *Service) toolAvailable(tool string) bool {
	switch tool {
	case toolWebSearch, toolFetch:
		return a.web()
	case toolListSiblings, toolSendMessage, toolReadMessages, toolSendInput:
		return a.messenger != nil
	}
	return true
}

// spawnType resolves the type a parent's spawn_subagent names, among the
// types of the parent's bundle (behaviour.go), the default when it names
// none; an unknown type is a toolError listing the types.
func (a *Service) spawnType(parent *Run, name string) (*AgentType, error) {
	if name == "" {
		name = DefaultType
	}
	types := a.pinOf(parent).types
	at, ok := types.Get(name)
	if !ok {
		return nil, toolErrorf("type %q is not a sub-agent type; the types are: %s", name, strings.Join(types.Names(), ", "))
	}
	return at, nil
}

// runType is the type of a sub-agent, as its bundle defines it; nil for a
// root or a run whose type is no longer registered, which then keeps
// every tool of its depth.
func (a *Service) runType(run *Run) *AgentType {
	if run.AgentType == "" {
		return nil
	}
	at, _ := a.pinOf(run).types.Get(run.AgentType)
	return at
}
