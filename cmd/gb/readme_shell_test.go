package main

import "strings"

// splitComment cuts a shell line into its code and its trailing comment
// (a # that begins a word outside quotes).
func splitComment(s string) (code, comment string) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			i++
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n'):
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// shellCommand is one simple command of a line: its words (quotes taken
// off), whether it runs in the background (&), and whether it is inside
// a command substitution.
type shellCommand struct {
	words      []string
	background bool
	sub        bool
}

// shellCommands reads the simple commands of a line of code: split at |,
// ||, &&, ;, & and newlines, with the commands of each $( … ) read too
// (nested ones included). Redirections and their targets are left out.
func shellCommands(code string) []shellCommand {
	var out []shellCommand
	var parse func(s string, sub bool) int
	parse = func(s string, sub bool) int {
		cur := shellCommand{sub: sub}
		var word strings.Builder
		inWord, redirect := false, false
		endWord := func() {
			if inWord {
				if !redirect {
					cur.words = append(cur.words, word.String())
				}
				redirect = false
			}
			word.Reset()
			inWord = false
		}
		endCmd := func(bg bool) {
			endWord()
			if len(cur.words) > 0 {
				cur.background = bg
				out = append(out, cur)
			}
			cur = shellCommand{sub: sub}
		}
		var quote byte
		for i := 0; i < len(s); i++ {
			c := s[i]
			if quote == '\'' {
				if c == '\'' {
					quote = 0
				} else {
					word.WriteByte(c)
				}
				continue
			}
			if c == '$' && i+1 < len(s) && s[i+1] == '(' {
				n := parse(s[i+2:], true)
				i += 1 + n
				word.WriteString("$(…)")
				inWord = true
				continue
			}
			if quote == '"' {
				switch c {
				case '"':
					quote = 0
				case '\\':
					if i+1 < len(s) {
						i++
						word.WriteByte(s[i])
					}
				default:
					word.WriteByte(c)
				}
				continue
			}
			switch c {
			case '\'', '"':
				quote, inWord = c, true
			case '\\':
				if i+1 < len(s) && s[i+1] != '\n' {
					word.WriteByte(s[i+1])
					inWord = true
				}
				i++
			case ' ', '\t':
				endWord()
			case '\n', ';':
				endCmd(false)
			case '|':
				endCmd(false)
				if i+1 < len(s) && s[i+1] == '|' {
					i++
				}
			case '&':
				if i+1 < len(s) && s[i+1] == '&' {
					endCmd(false)
					i++
				} else if i+1 < len(s) && s[i+1] == '>' {
					endWord()
					redirect, inWord = true, false
					i++
				} else {
					endCmd(true)
				}
			case '<', '>':
				endWord()
				for i+1 < len(s) && (s[i+1] == '<' || s[i+1] == '>' || s[i+1] == '&') {
					i++
				}
				redirect = true
			case '(':
				endCmd(false)
			case ')':
				endCmd(false)
				if sub {
					return i + 1
				}
			default:
				if !inWord && c >= '0' && c <= '9' && i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '<') {
					continue // a file descriptor: 2>/dev/null
				}
				word.WriteByte(c)
				inWord = true
			}
		}
		endCmd(false)
		return len(s)
	}
	parse(code, false)
	return out
}
