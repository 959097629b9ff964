package inert_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gbresearch/gb/infra/inert"
)

func TestTextReplacesWhatDrivesATerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode 世界 🙂":            "plain text, ünïcode 世界 🙂",
		"two\nlines\tand a tab":               "two\nlines\tand a tab",
		"\x1b[2Jcleared":                      "␛[2Jcleared",
		"\x1b]0;pwned\x07title":               "␛]0;pwned␇title",
		"\x1b]8;;http://x\x1b\\link":          "␛]8;;http://x␛\\link",
		"cr\roverwrites":                      "cr␍overwrites",
		"nul\x00del\x7f":                      "nul␀del␡",
		"c1 \u009b2J csi \u009d0;t\u009c osc": "c1 \uFFFD2J csi \uFFFD0;t\uFFFD osc",
		"raw \x9b byte":                       "raw \uFFFD byte",
		"bidi \u202eevil\u202c \u2066x\u2069": "bidi \uFFFDevil\uFFFD \uFFFDx\uFFFD",
		"marks \u200e\u200f\u061c":            "marks \uFFFD\uFFFD\uFFFD",
		"sep\u2028line\u2029":                 "sep\uFFFDline\uFFFD",
	} {
		got := inert.Text(in)
		if got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if inert.Unsafe(got) || !utf8.ValidString(got) {
			t.Errorf("Text(%q) = %q is still unsafe", in, got)
		}
		if inert.Unsafe(in) != (in != want) {
			t.Errorf("Unsafe(%q) = %v", in, inert.Unsafe(in))
		}
	}
}

// Every rune and every byte value goes through safe.
func TestTextLeavesNoControl(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		b.WriteRune(r)
	}
	for c := 0x80; c < 0x100; c++ {
		b.WriteByte(byte(c))
	}
	out := inert.Text(b.String())
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7F && r <= 0x9F) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			t.Fatalf("%U left in the text", r)
		}
	}
	if inert.Unsafe(out) {
		t.Fatal("Unsafe says the output is unsafe")
	}
}

func FuzzText(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := inert.Text(s)
		if inert.Unsafe(out) || !utf8.ValidString(out) || strings.ContainsAny(out, "\x1b\x07\r\x7f") {
			t.Fatalf("Text(%q) = %q", s, out)
		}
		if !inert.Unsafe(s) && out != s {
			t.Fatalf("safe %q changed to %q", s, out)
		}
	})
}

// JSON escapes what Text replaces and decodes to the same value.
func TestJSONEscapesAndKeepsTheValue(t *testing.T) {
	v := map[string]string{"report": "a \x1b[2J b \u009b c \u202e d \x7f e\n世界"}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := inert.JSON(b)
	if inert.Unsafe(string(out)) {
		t.Fatalf("JSON left a control: %q", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["report"] != v["report"] {
		t.Fatalf("decoded %q (%v), want %q", back["report"], err, v["report"])
	}
}
