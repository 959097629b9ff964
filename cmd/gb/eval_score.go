package main

import (
	"regexp"
	"slices"
	"strings"
)

// notCoveredRE is what a report says when its documents do not answer the
// question: the right answer to an unanswerable question, and a wrong one
// to a question the dataset answers.
var notCoveredRE = regexp.MustCompile(`(?i)(do(es)? not cover|not covered|(does|do) not (answer|address|mention|document)|` +
	`no (information|documentation|document|source)s? (about|on|that|in)|cannot (be )?answer(ed)?|` +
	`(is|are) not (in|part of) (the|this) (dataset|knowledge base|documentation))`)

// evalSourcesHeadRE starts the sources list at the end of a report.
var evalSourcesHeadRE = regexp.MustCompile(`(?mi)^\s*(#+\s*)?(\*\*)?sources:?(\*\*)?\s*:?\s*$`)

// evalURLRE is a URL or a source the sources list names.
var evalURLRE = regexp.MustCompile(`(?:https?://|[a-z][a-z0-9+.-]*:)[^\s<>()\[\]]+`)

// score is how a report does against its question.
type score struct {
	// Found and Missed are the facts the report states and does not.
	Found  []string `json:"found"`
	Missed []string `json:"missed"`
	// SaysNotCovered is set when the report says its documents do not
	// cover the question.
	SaysNotCovered bool `json:"says_not_covered"`
	// Honest is false when an unanswerable question got an answer that
	// does not say so, or an answerable one was declined.
	Honest bool `json:"honest"`
	// Cited and Uncited are the expected sources the sources list has and
	// has not.
	Cited   []string `json:"cited,omitempty"`
	Uncited []string `json:"uncited,omitempty"`
}

// scoreReport checks a report against its question: facts are looked for
// in the report's text without its heading (which repeats the question)
// and its sources list; expected sources in the sources list.
func scoreReport(q *evalQuestion, report string) score {
	body, sources := splitReport(report, q.Question)
	s := score{SaysNotCovered: notCoveredRE.MatchString(body)}
	s.Honest = s.SaysNotCovered == q.Unanswerable
	for i, re := range q.facts {
		if re.MatchString(body) {
			s.Found = append(s.Found, q.Facts[i])
		} else {
			s.Missed = append(s.Missed, q.Facts[i])
		}
	}
	urls := evalURLRE.FindAllString(sources, -1)
	for i, re := range q.sources {
		if slices.ContainsFunc(urls, re.MatchString) {
			s.Cited = append(s.Cited, q.Sources[i])
		} else {
			s.Uncited = append(s.Uncited, q.Sources[i])
		}
	}
	return s
}

// splitReport cuts a report into its text and its sources list, dropping
// the lines that only repeat the question.
func splitReport(report, question string) (body, sources string) {
	body = report
	if loc := evalSourcesHeadRE.FindAllStringIndex(report, -1); len(loc) > 0 {
		last := loc[len(loc)-1]
		body, sources = report[:last[0]], report[last[1]:]
	} else {
		sources = report // a report without a list cites inline
	}
	q := strings.TrimSpace(question)
	var kept []string
	for _, line := range strings.Split(body, "\n") {
		if t := strings.TrimSpace(line); q != "" && strings.Contains(t, q) && len(t) < len(q)+40 {
			continue // "# Report: <question>"
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "\n"), sources
}
