package main

import (
	"fmt"
	"regexp"
	"strings"
)

// readmeBlock is one fenced shell block of the README (```sh, ```bash,
// ```shell or ```console), with its lines as the walk classified them.
type readmeBlock struct {
	line  int    // README line of the opening fence
	text  string // the block's text, as written
	needs string // the "Needs …" sentence of the paragraph before it, if any
	lines []readmeLine
}

// readmeLine is one command line of a block: a physical line, or several
// joined by a trailing backslash.
type readmeLine struct {
	line    int    // README line of its first physical line
	n       int    // physical lines it spans
	text    string // as written, continuations kept
	skip    string // why the walk does not run it ("" runs it)
	problem string // why the walk cannot run it and it says nothing ("" none)
	sets    []string
}

// shellLangs are the info strings of the fenced blocks the walk reads.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// needsSentence is a sentence that says what a block needs: "Needs" at the
// start of a line or of a sentence of the paragraph right before the block.
var needsSentence = regexp.MustCompile(`(?:^|[.:;!?]\s+|\n)(Needs\s[^\n]*(?:\n[^\n]+)*)`)

// parseREADME reads the fenced shell blocks of readme, in order.
func parseREADME(readme string) []readmeBlock {
	var blocks []readmeBlock
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.Fields(strings.TrimPrefix(fence, "```") + " ")
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if len(lang) > 0 && shellLangs[lang[0]] {
			b := readmeBlock{line: i + 1, text: strings.Join(lines[i+1:min(end, len(lines))], "\n"),
				needs: needsBefore(lines[:i])}
			b.lines = splitBlockLines(lines[i+1:min(end, len(lines))], i+2, lang[0] == "console")
			blocks = append(blocks, b)
		}
		i = end
	}
	return blocks
}

// needsBefore is the "Needs …" sentence of the paragraph that ends right
// before a block (blank lines between them allowed), or "".
func needsBefore(before []string) string {
	end := len(before)
	for end > 0 && strings.TrimSpace(before[end-1]) == "" {
		end--
	}
	start := end
	for start > 0 && strings.TrimSpace(before[start-1]) != "" && !strings.HasPrefix(strings.TrimSpace(before[start-1]), "```") {
		start--
	}
	m := needsSentence.FindStringSubmatch(strings.Join(before[start:end], "\n"))
	if m == nil {
		return ""
	}
	s := strings.Join(strings.Fields(m[1]), " ")
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	return s
}

// splitBlockLines cuts a block's text into command lines, first being the
// README line of text[0]. In a console block only the lines after a "$ "
// prompt are commands (the prompt taken off); the rest is output.
func splitBlockLines(text []string, first int, console bool) []readmeLine {
	var out []readmeLine
	for i := 0; i < len(text); i++ {
		start := i
		l := text[i]
		if console {
			cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "$ ")
			if !ok {
				continue
			}
			l = cmd
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(text) {
			i++
			l += "\n" + text[i]
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		out = append(out, classifyLine(readmeLine{line: first + start, n: i - start + 1, text: l}))
	}
	return out
}

// The commands the walk knows: walkTools and goRunnable run offline as
// written; suiteTools are the test suite, which the walk is part of, so it
// does not run them again.
var (
	walkTools = map[string]bool{
		"bin/gb": true, "./bin/gb": true, "curl": true, "jq": true, "infra/pg.sh": true,
		"sleep": true, "kill": true, "wait": true, "export": true, "echo": true, "printf": true,
		"true": true, "false": true, "test": true, "[": true, "cat": true, "head": true, "tail": true,
		"grep": true, "sed": true, "tee": true, "wc": true, "sort": true, "cut": true, "tr": true, "date": true,
	}
	suiteTools = map[string]bool{"infra/test.sh": true, "go test": true}
	// goRunnable are the go subcommands the walk runs.
	goRunnable = map[string]bool{"build": true, "run": true, "env": true, "vet": true}
	// shellWords start or end a compound command: the next word is a command.
	shellWords = map[string]bool{"until": true, "while": true, "if": true, "then": true, "else": true,
		"elif": true, "do": true, "done": true, "fi": true, "!": true, "{": true, "}": true, "(": true, ")": true}
)

// assignment is a word that sets a variable (name=value), its name first.
var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=`)

// classifyLine sets what the walk does with l: it runs it, skips it (a
// comment that begins "needs", or a run of the test suite), or finds a
// problem (a command it cannot run offline, a server left in the
// foreground), and the shell variables l sets.
func classifyLine(l readmeLine) readmeLine {
	code, comment := splitComment(l.text)
	if c := strings.TrimSpace(comment); strings.HasPrefix(strings.ToLower(c), "needs ") {
		l.skip = c
		return l
	}
	for _, c := range shellCommands(code) {
		words := c.words
		i := 0
		for i < len(words) && (assignment.MatchString(words[i]) || shellWords[words[i]]) {
			if m := assignment.FindStringSubmatch(words[i]); m != nil && !c.sub && len(words) == countAssignments(words) {
				l.sets = append(l.sets, m[1])
			}
			i++
		}
		if i == len(words) {
			continue
		}
		name, args := words[i], words[i+1:]
		if name == "export" {
			for _, a := range args {
				if m := assignment.FindStringSubmatch(a); m != nil {
					l.sets = append(l.sets, m[1])
				}
			}
		}
		if name == "go" && len(args) > 0 {
			name = "go " + args[0]
			if args[0] == "run" && len(args) > 1 && args[1] == "./cmd/gb" {
				name, args = "bin/gb", args[2:]
			}
		}
		switch {
		case suiteTools[name]:
			l.skip = "the test suite, which runs this walk"
		case strings.HasPrefix(name, "go ") && goRunnable[strings.TrimPrefix(name, "go ")]:
		case name == "gb":
			l.problem = "runs gb, which is not on PATH after the README's steps (they build bin/gb)"
		case !walkTools[name]:
			l.problem = fmt.Sprintf("runs %s, which the walk cannot run offline", name)
		case strings.HasSuffix(name, "bin/gb") && isServer(args) && !c.background:
			l.problem = fmt.Sprintf("starts a server (gb %s) in the foreground, where it never ends: end the command with &", serverName(args))
		}
		if l.skip != "" || l.problem != "" {
			return l
		}
	}
	return l
}

// countAssignments is how many words of a command are assignments before
// its first other word.
func countAssignments(words []string) int {
	n := 0
	for n < len(words) && assignment.MatchString(words[n]) {
		n++
	}
	return n
}

// isServer reports whether gb args serve until they are stopped: gb dev,
// gb worker, gb webhooks listen without --count.
func isServer(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "dev", "worker":
		return true
	case "webhooks":
		if len(args) > 1 && args[1] == "listen" {
			for _, a := range args {
				if a == "--count" || strings.HasPrefix(a, "--count=") {
					return false
				}
			}
			return true
		}
	}
	return false
}

// serverName is the command of the server gb args start (dev, webhooks listen).
func serverName(args []string) string {
	if args[0] == "webhooks" {
		return "webhooks listen"
	}
	return args[0]
}
