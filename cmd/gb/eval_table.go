package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// evalSummary adds up the results of one configuration.
type evalSummary struct {
	Questions   int             `json:"questions"`
	Succeeded   int             `json:"succeeded"`
	FactsFound  int             `json:"facts_found"`
	FactsTotal  int             `json:"facts_total"`
	Honest      int             `json:"honest"`
	SourcesOK   int             `json:"sources_cited"`
	SourcesWant int             `json:"sources_expected"`
	Citations   *citationCounts `json:"citations,omitempty"`
	Tokens      int64           `json:"tokens"`
	Cached      int64           `json:"cached_tokens"`
	CostUSD     float64         `json:"cost_usd"`
	WallSeconds float64         `json:"wall_seconds"`
	Agents      int             `json:"agents"`
	Steps       int             `json:"steps"`
	// Medians per question.
	MedianTokens      float64 `json:"median_tokens"`
	MedianCostUSD     float64 `json:"median_cost_usd"`
	MedianWallSeconds float64 `json:"median_wall_seconds"`
	MedianAgents      float64 `json:"median_agents"`
	MedianSteps       float64 `json:"median_steps"`
}

// summarize adds up results; the medians are of the questions that ran.
func summarize(results []evalResult) evalSummary {
	var s evalSummary
	var tokens, cost, wall, agents, steps []float64
	for _, r := range results {
		s.Questions++
		s.FactsFound += len(r.Score.Found)
		s.FactsTotal += len(r.Score.Found) + len(r.Score.Missed)
		s.SourcesOK += len(r.Score.Cited)
		s.SourcesWant += len(r.Score.Cited) + len(r.Score.Uncited)
		if r.Status == "skipped" || r.Status == "error" {
			continue
		}
		if r.Status == "succeeded" {
			s.Succeeded++
		}
		if r.Score.Honest {
			s.Honest++
		}
		if c := r.Citations; c != nil {
			if s.Citations == nil {
				s.Citations = &citationCounts{}
			}
			s.Citations.Claims += c.Claims
			s.Citations.Supported += c.Supported
			s.Citations.Weak += c.Weak
			s.Citations.Unsupported += c.Unsupported
			s.Citations.Unread += c.Unread
			s.Citations.Uncited += c.Uncited
		}
		s.Tokens += r.Tokens
		s.Cached += r.CachedTokens
		s.CostUSD += r.CostUSD
		s.WallSeconds += r.WallSeconds
		s.Agents += r.Agents
		s.Steps += r.Steps
		tokens = append(tokens, float64(r.Tokens))
		cost = append(cost, r.CostUSD)
		wall = append(wall, r.WallSeconds)
		agents = append(agents, float64(r.Agents))
		steps = append(steps, float64(r.Steps))
	}
	s.MedianTokens, s.MedianCostUSD, s.MedianWallSeconds = median(tokens), median(cost), median(wall)
	s.MedianAgents, s.MedianSteps = median(agents), median(steps)
	return s
}

// median is the middle of xs (the mean of the two middle ones), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// evalHeader are the columns of one configuration's table.
var evalHeader = []string{"QUESTION", "STATUS", "FACTS", "MISSED", "ANSWER", "SOURCES", "CLAIMS", "SUP", "WEAK",
	"UNSUP", "UNREAD", "UNCITED", "TOKENS", "CACHED", "COST", "WALL", "AGENTS", "STEPS"}

// printEval prints one configuration's table, then its totals and medians.
func printEval(w io.Writer, cfg *evalConfig, set *evalSet, results []evalResult) error {
	fmt.Fprintf(w, "%s: %s · model %s%s\n\n", cfg.Label, set.Name, cfg.Model, cfg.describe())
	t := newTable(w, evalHeader...)
	for i, r := range results {
		t.row(append([]string{r.Question, r.Status, facts(r), fit(strings.Join(r.Score.Missed, "; "), 32),
			answerVerdict(&set.Questions[i], r), sourcesCell(r)}, append(citationCells(r.Citations, r.Status),
			usageCells(r.Tokens, r.CachedTokens, r.CostUSD, r.WallSeconds, float64(r.Agents), float64(r.Steps), false)...)...)...)
	}
	s := summarize(results)
	t.row(append([]string{"TOTAL", fmt.Sprintf("%d/%d ok", s.Succeeded, s.Questions), fmt.Sprintf("%d/%d", s.FactsFound, s.FactsTotal),
		"", fmt.Sprintf("%d/%d right", s.Honest, s.Questions), ratio(s.SourcesOK, s.SourcesWant)},
		append(citationCells(s.Citations, "succeeded"),
			usageCells(s.Tokens, s.Cached, s.CostUSD, s.WallSeconds, float64(s.Agents), float64(s.Steps), false)...)...)...)
	t.row(append([]string{"MEDIAN", "", "", "", "", "", "", "", "", "", "", ""},
		usageCells(int64(s.MedianTokens), -1, s.MedianCostUSD, s.MedianWallSeconds, s.MedianAgents, s.MedianSteps, true)...)...)
	return t.flush()
}

// describe is what the configuration changes, for the table's title.
func (c *evalConfig) describe() string {
	var parts []string
	for _, k := range slices.Sorted(mapKeys(c.Set)) {
		v := c.Set[k]
		if strings.Contains(strings.ToUpper(k), "KEY") || strings.Contains(strings.ToUpper(k), "SECRET") {
			v = "…" // never print a key
		}
		parts = append(parts, k+"="+v)
	}
	if c.Prompts != "" {
		parts = append(parts, "prompts "+c.Prompts)
	}
	if c.ForkStep != nil {
		parts = append(parts, fmt.Sprintf("forks of A's researches at step %d (replayed at no cost)", *c.ForkStep))
	}
	if len(parts) == 0 {
		return ""
	}
	return " · " + strings.Join(parts, " ")
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// facts is "found/total" of a result.
func facts(r evalResult) string {
	if r.Status == "skipped" || r.Status == "error" {
		return "-"
	}
	return fmt.Sprintf("%d/%d", len(r.Score.Found), len(r.Score.Found)+len(r.Score.Missed))
}

// answerVerdict says whether the report answered as it should: "answered"
// or "DECLINED" for a question the dataset answers, "says n/c" or
// "ANSWERED" (wrongly) for one it cannot.
func answerVerdict(q *evalQuestion, r evalResult) string {
	switch {
	case r.Status == "skipped" || r.Status == "error":
		return "-"
	case q.Unanswerable && r.Score.SaysNotCovered:
		return "says n/c"
	case q.Unanswerable:
		return "ANSWERED"
	case r.Score.SaysNotCovered:
		return "DECLINED"
	}
	return "answered"
}

func sourcesCell(r evalResult) string {
	return ratio(len(r.Score.Cited), len(r.Score.Cited)+len(r.Score.Uncited))
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", a, b)
}

// citationCells are the citation verdict counts, "-" when the run has no
// citation check.
func citationCells(c *citationCounts, status string) []string {
	if c == nil || status == "skipped" || status == "error" {
		return []string{"-", "-", "-", "-", "-", "-"}
	}
	return []string{strconv.Itoa(c.Claims), strconv.Itoa(c.Supported), strconv.Itoa(c.Weak), strconv.Itoa(c.Unsupported),
		strconv.Itoa(c.Unread), strconv.Itoa(c.Uncited)}
}

// usageCells are tokens, cached tokens (-1: none shown), cost, wall time,
// agents and steps; medians show their halves.
func usageCells(tokens, cached int64, cost, wall, agents, steps float64, halves bool) []string {
	num := func(x float64) string {
		if halves {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	c := ""
	if cached >= 0 {
		c = strconv.FormatInt(cached, 10)
	}
	return []string{strconv.FormatInt(tokens, 10), c, fmt.Sprintf("$%.4f", cost), fmt.Sprintf("%.1fs", wall), num(agents), num(steps)}
}
